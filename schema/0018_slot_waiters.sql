-- Jobs waiting in their workflow for a concurrency slot (issue 11: "woken when a slot frees").
-- A job whose step found no slot free registers here as it goes to wait; the statement that
-- frees a slot of its job type takes the oldest waiter (its tenant's first) out in the same
-- statement, and the worker signals that job's workflow, which then tries again at once instead
-- of at the end of its back-off. A wake that goes astray (the job finished meanwhile, or
-- another job took the slot first) costs one try: every waiter keeps its timer as well.
CREATE TABLE slot_waiters (
  job_id    text PRIMARY KEY,
  job_type  text NOT NULL,
  tenant_id text NOT NULL,
  since     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX slot_waiters_tenant ON slot_waiters (job_type, tenant_id, since);
CREATE INDEX slot_waiters_type ON slot_waiters (job_type, since);
