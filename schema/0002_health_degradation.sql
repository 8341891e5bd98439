-- Queue health and degradation. Every figure the health report shows is derived from rows
-- (these and the core tables), never from one process's memory, so two API processes
-- report the same numbers.

-- Rates over sliding windows scan by these timestamps.
CREATE INDEX job_intents_created_at ON job_intents (created_at);
CREATE INDEX job_intents_finished_at ON job_intents (finished_at) WHERE finished_at IS NOT NULL;

-- Deferral, visible on the job: since when it has been held back (and why: status_reason),
-- and when the gate let it through (so time deferred is never mistaken for queue time).
ALTER TABLE job_intents ADD COLUMN deferred_at timestamptz;
ALTER TABLE job_intents ADD COLUMN admitted_at timestamptz;

-- The degradation setting: exactly one row. `paused_since` keeps, per paused priority, the
-- time it was first paused (re-sending the same pause does not reset it).
CREATE TABLE degradation_setting (
  id                        smallint PRIMARY KEY CHECK (id = 1),
  paused_priorities         text[] NOT NULL DEFAULT '{}'
                            CHECK (paused_priorities <@ ARRAY['high', 'normal', 'low']::text[]),
  paused_since              jsonb NOT NULL DEFAULT '{}',
  recovery_rate_per_minute  integer NOT NULL DEFAULT 60 CHECK (recovery_rate_per_minute BETWEEN 1 AND 10000),
  updated_by                text NOT NULL,
  updated_at                timestamptz NOT NULL DEFAULT now()
);
INSERT INTO degradation_setting (id, updated_by) VALUES (1, 'migration 0002');

-- Who changed the setting, when, and from what to what. Append-only.
CREATE TABLE degradation_audit (
  id           bigserial PRIMARY KEY,
  actor        text NOT NULL,          -- X-Operator header, else 'admin'
  key_id       text NOT NULL,          -- first 12 hex of sha256(admin key): which key, never the key
  remote_addr  text,
  reason       text,
  before       jsonb NOT NULL,
  after        jsonb NOT NULL,
  at           timestamptz NOT NULL DEFAULT now()
);

-- The admission ledger: one row per ramped admission of a job that was held back. The
-- primary key makes a retried reservation (same job, same gate round) the same row; the
-- slot order is serialised by an advisory lock (see store/degradation.ts).
CREATE TABLE admissions (
  job_id       text NOT NULL,
  round        integer NOT NULL,
  priority     text NOT NULL,
  reserved_at  timestamptz NOT NULL DEFAULT now(),
  slot_at      timestamptz NOT NULL,   -- earliest admission time (spacing 60 s / rate)
  admitted_at  timestamptz,            -- when the gate actually let it through
  PRIMARY KEY (job_id, round)
);
CREATE INDEX admissions_slot ON admissions (slot_at);
CREATE INDEX admissions_admitted ON admissions (admitted_at) WHERE admitted_at IS NOT NULL;

-- One row per attempt of a leased (heartbeating) activity: start, end, outcome. An attempt
-- whose next attempt began while it had no end is a lease expiration (the worker died, or
-- a heartbeat / start-to-close timeout fired); the next attempt flags it.
CREATE TABLE activity_leases (
  job_id               text NOT NULL,  -- = workflow ID
  run_id               text NOT NULL,
  activity_id          text NOT NULL,
  attempt              integer NOT NULL,
  activity_type        text NOT NULL,
  started_at           timestamptz NOT NULL DEFAULT now(),
  deadline_at          timestamptz NOT NULL,  -- started_at + start-to-close
  ended_at             timestamptz,
  outcome              text CHECK (outcome IN ('completed', 'failed', 'cancelled', 'lease_expired')),
  expired_detected_at  timestamptz,
  heartbeat_details    jsonb,
  PRIMARY KEY (job_id, run_id, activity_id, attempt)
);
CREATE INDEX activity_leases_expired ON activity_leases (expired_detected_at) WHERE expired_detected_at IS NOT NULL;
CREATE INDEX activity_leases_open ON activity_leases (deadline_at) WHERE ended_at IS NULL;

-- Intake that could not persist (503): a counter per minute and cause, written best-effort
-- by the HTTP layer (buffered in memory while Postgres itself is the cause).
CREATE TABLE intake_rejections (
  minute  timestamptz NOT NULL,
  cause   text NOT NULL,
  count   integer NOT NULL,
  PRIMARY KEY (minute, cause)
);

-- One sample per minute of the figures that cannot be recomputed for the past (Temporal's
-- backlog, open dead letters, outbox): the trend lines of `npm run health`. The minute
-- comes from the database clock, so concurrent samplers collide on the key.
CREATE TABLE health_samples (
  minute   timestamptz PRIMARY KEY,
  figures  jsonb NOT NULL
);
