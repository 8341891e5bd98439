-- Per-job cost (issue 11).
-- The step a leased attempt runs, written in the attempt's first transaction: an attempt lost
-- before its first heartbeat (there is none at the very start any more) still tells the next
-- attempt which step it was running, so job_attempts counts it as lease_expired.
ALTER TABLE activity_leases ADD COLUMN step text;

-- The degradation gate asks on every admission whether other jobs of the priority are still
-- deferred; without this it walks every deferred row of the other priorities through the
-- (status, updated_at) index while one priority is paused.
CREATE INDEX job_intents_deferred_priority ON job_intents (priority) WHERE status = 'deferred';

-- Concurrency slots without a lock per job type: one row per slot of each scope (a job type's
-- tenant, a job type, all job types), taken with FOR UPDATE SKIP LOCKED, so acquirers of
-- different slots never wait for each other. A slot is held by a concurrency_leases row
-- (lease_id) until expires_at (renewed with the lease); it is free when lease_id is NULL or
-- it expired (a dead worker). The expiry is a column of the slot row itself, not read through
-- the lease: a concurrent acquirer re-checks the newest version of the row it locks, and must
-- see there that it was just taken. Rows are created on first use up to the scope's cap; rows
-- above a lowered cap are ignored.
CREATE TABLE concurrency_slots (
  scope      text NOT NULL,
  n          int NOT NULL,
  lease_id   bigint,
  expires_at timestamptz,
  PRIMARY KEY (scope, n)
);
CREATE INDEX concurrency_slots_lease ON concurrency_slots (lease_id) WHERE lease_id IS NOT NULL;
