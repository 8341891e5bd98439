-- Scheduled windows and compensation-scan runs.

-- One row per (job type, window): the trigger inserts it before it starts the window's
-- jobs, so a duplicate trigger, a manual trigger in the same window or a backfill finds the
-- row (and only counts itself in `triggers`). The compensation scan compares these rows with
-- the schedule's matching times to find windows that never fired.
CREATE TABLE schedule_windows (
  job_type         text NOT NULL,
  window_start     timestamptz NOT NULL,
  window_end       timestamptz NOT NULL,
  schedule_id      text NOT NULL,
  -- Who saw the window first: the schedule, a manual start of the trigger, or the scan.
  first_source     text NOT NULL CHECK (first_source IN ('schedule', 'manual', 'scan')),
  first_trigger_id text NOT NULL,
  triggers         integer NOT NULL DEFAULT 1,
  -- Jobs ensured for the window (one per tenant); NULL until every tenant's job was started.
  jobs             integer,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  filled_at        timestamptz,
  PRIMARY KEY (job_type, window_start)
);
CREATE INDEX schedule_windows_unfilled ON schedule_windows (first_seen_at) WHERE filled_at IS NULL;

-- One row per compensation-scan run, with what it repaired. Keyed by the workflow run, so a
-- retried recording activity writes it once.
CREATE TABLE scan_runs (
  run_id              text PRIMARY KEY,
  workflow_id         text NOT NULL,
  scan_now            timestamptz NOT NULL,
  windows_filled      integer NOT NULL DEFAULT 0,
  intents_started     integer NOT NULL DEFAULT 0,
  outbox_redelivered  integer NOT NULL DEFAULT 0,
  effects_reconciled  integer NOT NULL DEFAULT 0,
  effects_not_applied integer NOT NULL DEFAULT 0,
  errors              integer NOT NULL DEFAULT 0,
  -- The step-level errors (message only), for the operator.
  error_details       jsonb NOT NULL DEFAULT '[]',
  started_at          timestamptz NOT NULL,
  finished_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scan_runs_finished ON scan_runs (finished_at);
