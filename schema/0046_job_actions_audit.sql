-- One operator action on one job, outside a bulk action (issue 38 §3): today a single rerun
-- (`POST /v1/admin/jobs/:jobId/rerun`, the client's `rerun`, `durable-jobs job rerun`). A bulk
-- action's items have their audit rows in bulk_action_items; this is the same row for the
-- action taken on its own: who, when, on which job, and what it made (the rerun's job ID and
-- the step it reran from). Written in the transaction that writes the rerun's intent, so a
-- rerun never exists without its row. Append-only like the other audit tables (schema/0029).
CREATE TABLE job_actions (
  id          bigserial PRIMARY KEY,
  job_id      text NOT NULL,
  action      text NOT NULL CHECK (action IN ('rerun')),
  actor       text NOT NULL,
  -- The job the action made (a rerun's `<jobId>-rerun-<n>`), shown on its timeline too.
  result_job_id text,
  details     jsonb NOT NULL DEFAULT '{}',
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_actions_job ON job_actions (job_id, at);
CREATE INDEX job_actions_result_job ON job_actions (result_job_id) WHERE result_job_id IS NOT NULL;

REVOKE UPDATE, DELETE, TRUNCATE ON job_actions FROM PUBLIC;

CREATE TRIGGER job_actions_append_only BEFORE UPDATE OR DELETE ON job_actions
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER job_actions_no_truncate BEFORE TRUNCATE ON job_actions
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
