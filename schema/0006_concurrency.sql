-- Concurrency budgets beside the retry budget: at most N upstream calls in flight per
-- (job type, tenant) and per job type in total, across every worker process. A lease row
-- per call in flight; a crashed worker's lease expires instead of leaking its slot.
CREATE TABLE concurrency_leases (
  id          bigserial PRIMARY KEY,
  job_type    text NOT NULL,
  tenant_id   text NOT NULL,
  holder      text NOT NULL,          -- effect key + attempt: who holds the slot
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX concurrency_leases_scope ON concurrency_leases (job_type, tenant_id);
CREATE INDEX concurrency_leases_expiry ON concurrency_leases (expires_at);
