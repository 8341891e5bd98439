-- The bulk actions' audit rows are append-only too (schema/0029): one row per item under the
-- operator's name, and each pause / resume / stop with its operator. Their request row
-- (bulk_actions) is the action's state, updated as it runs, and stays writable.
REVOKE UPDATE, DELETE, TRUNCATE ON bulk_action_items, bulk_action_commands FROM PUBLIC;

CREATE TRIGGER bulk_action_items_append_only BEFORE UPDATE OR DELETE ON bulk_action_items
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER bulk_action_items_no_truncate BEFORE TRUNCATE ON bulk_action_items
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER bulk_action_commands_append_only BEFORE UPDATE OR DELETE ON bulk_action_commands
  FOR EACH ROW EXECUTE FUNCTION durable_jobs_refuse_audit_change();
CREATE TRIGGER bulk_action_commands_no_truncate BEFORE TRUNCATE ON bulk_action_commands
  FOR EACH STATEMENT EXECUTE FUNCTION durable_jobs_refuse_audit_change();
