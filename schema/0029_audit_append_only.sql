-- Audit rows are append-only for the application (issue 39 §4, F9; OWASP ASVS 7.3.3):
-- dead_letter_actions, replay_actions and degradation_audit.
--
-- How migrations run and how the app connects: by default both use DATABASE_URL, so the
-- application's role usually OWNS these tables, and an owner can do anything to its tables
-- (GRANT itself privileges back, disable triggers). Privileges alone therefore cannot stop the
-- app; what stops it is a trigger, which fires for every role, owner included, unless someone
-- deliberately alters the table (a DDL statement no application query runs). So:
--
-- 1. REVOKE UPDATE, DELETE, TRUNCATE ... FROM PUBLIC: a separate, least-privileged application
--    role (DATABASE_MIGRATION_URL owning the schema, DATABASE_URL a role granted only what it
--    needs: docs/security.md) is never given them by default.
-- 2. BEFORE UPDATE / DELETE row triggers and a BEFORE TRUNCATE statement trigger that raise,
--    whoever the role is.
--
-- One exception, on a path of its own: the retention cleanup prunes degradation_audit rows
-- older than their retention period (default 365 days). It does so only through
-- durable_jobs_prune_degradation_audit(days, batch), which marks its own transaction for the
-- trigger and deletes only rows older than the given age. dead_letter_actions and replay_actions
-- are never pruned (dead letters are evidence, contract/retention.ts).
CREATE FUNCTION durable_jobs_refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'degradation_audit'
     AND current_setting('durable_jobs.audit_prune', true) = 'retention' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit rows are append-only: % on % is refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege', HINT = 'audit tables take INSERT and SELECT only (schema/0029_audit_append_only.sql)';
END;
$$;

CREATE FUNCTION durable_jobs_prune_degradation_audit(days double precision, batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  IF days IS NULL OR days <= 0 THEN
    RAISE EXCEPTION 'retention days must be > 0';
  END IF;
  PERFORM set_config('durable_jobs.audit_prune', 'retention', true);
  DELETE FROM degradation_audit WHERE ctid IN (
    SELECT ctid FROM degradation_audit WHERE at < now() - days * interval '1 day' LIMIT batch);
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('durable_jobs.audit_prune', '', true);
  RETURN n;
END;
$$;

REVOKE UPDATE, DELETE, TRUNCATE ON dead_letter_actions, replay_actions, degradation_audit FROM PUBLIC;

CREATE TRIGGER dead_letter_actions_append_only BEFORE UPDATE OR DELETE ON dead_letter_actions
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER dead_letter_actions_no_truncate BEFORE TRUNCATE ON dead_letter_actions
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER replay_actions_append_only BEFORE UPDATE OR DELETE ON replay_actions
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER replay_actions_no_truncate BEFORE TRUNCATE ON replay_actions
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER degradation_audit_append_only BEFORE UPDATE OR DELETE ON degradation_audit
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER degradation_audit_no_truncate BEFORE TRUNCATE ON degradation_audit
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
