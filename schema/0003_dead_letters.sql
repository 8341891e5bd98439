-- Dead letters: the evidence a job left when it could not finish, and the audit trail of
-- what operators did about it. A dead letter is never deleted; it moves between states.

CREATE TABLE dead_letters (
  id                    text PRIMARY KEY,        -- 'dl-' + hash(job_id, run_id): stable across retries
  job_id                text NOT NULL REFERENCES job_intents (job_id),
  run_id                text NOT NULL,           -- the Temporal run whose history shows the failure
  tenant_id             text NOT NULL,
  job_type              text NOT NULL,
  error_class           text NOT NULL,           -- stable class (invalid_request, upstream_unavailable, ...)
  error_type            text,                    -- Temporal failure type (NonRetryableError, RetryBudgetExhausted, ...)
  status_code           integer,                 -- upstream HTTP status, when there was one
  retry_state           text,                    -- why Temporal stopped retrying (MAXIMUM_ATTEMPTS_REACHED, ...)
  failed_step           text,                    -- activity type that failed last
  message               text NOT NULL,           -- redacted: never input values, secrets or keys
  attempts              integer NOT NULL,
  code_version          text NOT NULL,           -- package version (or CODE_VERSION) of the worker
  build_id              text,                    -- worker build ID that ran the workflow task
  input_hash            text NOT NULL,           -- input reference: the hash, and the row below
  input_ref             text NOT NULL,           -- pointer to the input ('job_intents:<job_id>'), never the input
  provider_request_ids  jsonb NOT NULL DEFAULT '[]',  -- [{step, requestId, outcome}]
  first_failure_at      timestamptz NOT NULL,
  last_failure_at       timestamptz NOT NULL,
  state                 text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'replaying', 'replayed', 'discarded')),
  discard_reason        text,
  -- Replays: how many were started (the next replay job is '<job_id>-replay-<n+1>'), the
  -- replay request that holds it now, and its job.
  replay_count          integer NOT NULL DEFAULT 0,
  replay_id             text,
  replay_job_id         text,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  -- Recording is idempotent: the same failure (job run) recorded twice is one row.
  CONSTRAINT dead_letters_once_per_run UNIQUE (job_id, run_id)
);
CREATE INDEX dead_letters_state ON dead_letters (state, created_at);

-- Who did what, when: recorded, replay requested / started / succeeded / failed, discarded.
CREATE TABLE dead_letter_actions (
  id              bigserial PRIMARY KEY,
  dead_letter_id  text NOT NULL REFERENCES dead_letters (id),
  action          text NOT NULL CHECK (action IN ('recorded', 'replay_requested', 'replay_started', 'replay_succeeded', 'replay_failed', 'replay_skipped', 'discarded')),
  actor           text NOT NULL,
  details         jsonb NOT NULL DEFAULT '{}',
  at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letter_actions_dl ON dead_letter_actions (dead_letter_id, id);

-- The job's status points at its evidence (GET /v1/jobs/{id} shows `deadLetterId`).
ALTER TABLE job_intents ADD COLUMN dead_letter_id text REFERENCES dead_letters (id);
CREATE INDEX job_intents_replay_of ON job_intents (replay_of) WHERE replay_of IS NOT NULL;
