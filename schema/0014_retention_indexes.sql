-- Indexes for the retention cleanup (activities/retention.ts): each batch finds its oldest
-- rows by their timestamp instead of scanning the whole table, and deleting an intent checks
-- the outbox rows that reference it by job.
CREATE INDEX effects_updated_at ON effects (updated_at);
CREATE INDEX activity_leases_started_at ON activity_leases (started_at);
CREATE INDEX intent_duplicates_received_at ON intent_duplicates (received_at);
CREATE INDEX outbox_job ON outbox (job_id);
CREATE INDEX outbox_settled ON outbox (created_at) WHERE state IN ('delivered', 'discarded');
CREATE INDEX webhook_deliveries_received_at ON webhook_deliveries (last_received_at);
CREATE INDEX degradation_audit_at ON degradation_audit (at);
