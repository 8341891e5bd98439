-- What operators did to a scheduled job type's Temporal Schedule (issue 38 §8): pause and
-- unpause (with a reason), trigger now and backfill a range, each under the operator's name.
-- Temporal keeps only the last pause note; this is the history the console shows. Append-only
-- like the other audit tables (schema/0029).
CREATE TABLE schedule_actions (
  id          bigserial PRIMARY KEY,
  job_type    text NOT NULL,
  schedule_id text NOT NULL,
  action      text NOT NULL CHECK (action IN ('paused', 'unpaused', 'triggered', 'backfilled')),
  actor       text NOT NULL,
  key_id      text,
  reason      text,
  -- The backfill's range; nothing of any job's input.
  details     jsonb NOT NULL DEFAULT '{}',
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedule_actions_type_at ON schedule_actions (job_type, at DESC);

REVOKE UPDATE, DELETE, TRUNCATE ON schedule_actions FROM PUBLIC;
CREATE TRIGGER schedule_actions_append_only BEFORE UPDATE OR DELETE ON schedule_actions
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER schedule_actions_no_truncate BEFORE TRUNCATE ON schedule_actions
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();

-- The console lists deliveries newest first, by keyset (first_seen_at, source, webhook_id).
CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (first_seen_at DESC, source DESC, webhook_id DESC);
