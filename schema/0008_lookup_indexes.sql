-- Indexes for two per-job lookups that scanned whole tables.
-- deliverOutbox reads a job's pending outbox rows; during a notification outage most rows
-- are pending, so the partial index on deliver_by alone does not narrow it to the job.
CREATE INDEX outbox_job_pending ON outbox (job_id) WHERE state = 'pending';
-- Every transcribe job looks up early webhook deliveries for its provider object (unmatched,
-- or already claimed by this job); the OR in that query cannot use a partial index on
-- outcome, and the deliveries table grows without bound.
CREATE INDEX webhook_deliveries_subject_any ON webhook_deliveries (event_type, subject);
