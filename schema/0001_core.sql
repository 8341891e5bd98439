-- Core tables: tenants, job intents (the durable record of each business intent and its
-- visible state), effects (evidence of every external side effect), attempts and outbox.

CREATE TABLE tenants (
  id            text PRIMARY KEY,
  -- sha256 of the API key: a database leak does not leak working keys.
  api_key_hash  text NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE job_intents (
  job_id              text PRIMARY KEY,          -- = Temporal workflow ID
  tenant_id           text NOT NULL REFERENCES tenants (id),
  job_type            text NOT NULL,
  -- Hash of (tenant, idempotency key); NULL for executions that no client key names
  -- (replays, scheduled windows), which the unique index below then ignores.
  key_hash            text,
  input_hash          text NOT NULL,
  input               jsonb NOT NULL,
  priority            text NOT NULL DEFAULT 'normal' CHECK (priority IN ('high', 'normal', 'low')),
  status              text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'running', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'deferred')),
  status_reason       text,
  attempts            integer NOT NULL DEFAULT 0,
  last_error          jsonb,
  next_attempt_at     timestamptz,
  result              jsonb,
  -- Fence of the write that stored `result`: only a newer fence may overwrite it, so a
  -- stale attempt finishing late cannot replace a newer result.
  result_fence        bigint NOT NULL DEFAULT 0,
  notification_state  text CHECK (notification_state IN ('pending', 'sent', 'failed')),
  replay_of           text REFERENCES job_intents (job_id),
  workflow_started_at timestamptz,
  first_started_at    timestamptz,   -- first attempt began executing (queue time ends here)
  finished_at         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
-- One business intent per tenant and key: concurrent duplicates collide here, and the
-- loser reads the winner's row instead of starting a second job.
CREATE UNIQUE INDEX job_intents_intent_once ON job_intents (tenant_id, key_hash);
CREATE INDEX job_intents_status ON job_intents (status, updated_at);
CREATE INDEX job_intents_unstarted ON job_intents (created_at) WHERE workflow_started_at IS NULL;

CREATE TABLE effects (
  effect_key          text PRIMARY KEY,           -- jobId:step, never per attempt
  job_id              text NOT NULL,
  tenant_id           text NOT NULL,
  step                text NOT NULL,
  state               text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
  request_hash        text NOT NULL,              -- input version: what was (or will be) sent
  provider_request_id text,
  provider_id         text,                       -- the provider's object ID (charge, summary, ...)
  result              jsonb,
  attempts            integer NOT NULL DEFAULT 0,
  reconciliations     integer NOT NULL DEFAULT 0,
  -- True while an attempt may have reached the upstream without us seeing the answer
  -- (in flight, crashed, timed out, 5xx). A later attempt then reconciles instead of
  -- assuming nothing happened. A definite refusal (429, 4xx) clears it.
  in_doubt            boolean NOT NULL DEFAULT true,
  first_attempt_at    timestamptz NOT NULL DEFAULT now(),
  last_attempt_at     timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX effects_job ON effects (job_id);
CREATE INDEX effects_pending ON effects (last_attempt_at) WHERE state = 'pending';

-- Every attempt, so stacked retries would show: count, class, status code, delay chosen.
CREATE TABLE job_attempts (
  id          bigserial PRIMARY KEY,
  job_id      text NOT NULL,
  step        text NOT NULL,
  attempt     integer NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('succeeded', 'retryable', 'non_retryable', 'reused', 'reconciled', 'fenced')),
  error_class text,
  status_code integer,
  delay_ms    integer,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_attempts_job ON job_attempts (job_id, id);
CREATE INDEX job_attempts_finished ON job_attempts (finished_at);

-- Notifications leave from here, written in the same transaction as the result.
CREATE TABLE outbox (
  id            bigserial PRIMARY KEY,
  job_id        text NOT NULL REFERENCES job_intents (job_id),
  kind          text NOT NULL,
  effect_key    text NOT NULL UNIQUE,
  payload       jsonb NOT NULL,
  state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text,
  deliver_by    timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  delivered_at  timestamptz
);
CREATE INDEX outbox_pending ON outbox (deliver_by) WHERE state = 'pending';
