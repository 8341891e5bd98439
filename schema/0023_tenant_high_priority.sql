-- Priority is an entitlement, not a claim (issue 39 §2, F11). Any tenant could send
-- `"priority": "high"` and so opt out of load shedding (a pause of low and normal). A tenant
-- may now ask for high only when this is true; the default is false, for existing tenants too:
-- an operator grants it (PATCH /v1/admin/tenants/{id}) or SEED_HIGH_PRIORITY_TENANTS does at
-- start. Who last changed it, and when, is kept on the row.
--
-- Numbered 0023: 0021 is another branch's, 0022 this branch's webhook body hash.
ALTER TABLE tenants
  ADD COLUMN may_use_high_priority boolean NOT NULL DEFAULT false,
  ADD COLUMN high_priority_changed_by text,
  ADD COLUMN high_priority_changed_at timestamptz;
