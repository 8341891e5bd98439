-- The job timeline (GET /v1/admin/jobs/{jobId}/timeline) needs two facts nothing recorded:

-- A duplicate submission (same tenant and Idempotency-Key) only read the winner's row, so
-- the timeline could not count duplicates or say when they came. One row per duplicate:
-- the job and the time, never the key or the input.
CREATE TABLE intent_duplicates (
  id           bigserial PRIMARY KEY,
  job_id       text NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX intent_duplicates_job ON intent_duplicates (job_id, id);

-- Why a retry waited as long as it did: the upstream's Retry-After, or full jitter.
ALTER TABLE job_attempts ADD COLUMN delay_source text CHECK (delay_source IN ('retry-after', 'jitter'));
