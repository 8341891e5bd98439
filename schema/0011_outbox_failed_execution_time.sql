-- A notification the upstream refused for good (or that ran out of its retry budget) was
-- left `pending` forever, keeping the outbox alerts raised. It now ends `failed` with its
-- evidence, and an operator replays it (back to `pending`, delivered again with the same
-- effect key) or discards it (`discarded`, never delivered), saying who and why.
ALTER TABLE outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_state_check CHECK (state IN ('pending', 'delivered', 'failed', 'discarded'));
ALTER TABLE outbox
  ADD COLUMN failed_at         timestamptz,
  ADD COLUMN error_class       text,
  ADD COLUMN status_code       integer,
  ADD COLUMN replays           integer NOT NULL DEFAULT 0,
  ADD COLUMN resolved_by       text,
  ADD COLUMN resolution_reason text,
  ADD COLUMN resolved_at       timestamptz;
CREATE INDEX outbox_failed ON outbox (failed_at) WHERE state = 'failed';

-- Execution time is the sum of the attempts' execution spans (each from when the attempt
-- could run, after any wait for a concurrency slot, to its end), so slot waits and retry
-- back-offs are not counted as execution. NULL for jobs finished before this column.
ALTER TABLE job_intents ADD COLUMN execution_ms bigint;
