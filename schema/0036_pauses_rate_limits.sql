-- Pauses by job type, tenant or (tenant, type) and the intake rate limit per tenant (issue 38 §4, §5).
--
-- paused_scopes: the pauses beside the priorities, on the one-row setting so the gate keeps
-- reading everything it decides by in one snapshot (store/admissions.ts, store/intent-attempts.ts).
-- Each entry is {"tenantId"?, "jobType"?, "since", "by", "reason"?}: a missing key matches any,
-- so {"jobType": "summarize"} pauses the type for every tenant and {"tenantId": "acme"} every
-- type of that tenant. A handful of entries at most, so a jsonb array scanned per check beats a
-- table and a join on every job's hot path. `by` is the operator, for the audit and the console
-- only; tenants read "paused by an operator".
ALTER TABLE degradation_setting ADD COLUMN paused_scopes jsonb NOT NULL DEFAULT '[]'
  CHECK (jsonb_typeof(paused_scopes) = 'array');

-- The intake rate limit, a token bucket per tenant: NULL rate = no limit (every tenant until an
-- operator sets one with PATCH /v1/admin/tenants/{id}). `intake_burst` is the bucket's size
-- (NULL: one second's worth, at least 1).
ALTER TABLE tenants
  ADD COLUMN intake_rate_per_second double precision CHECK (intake_rate_per_second > 0),
  ADD COLUMN intake_burst integer CHECK (intake_burst >= 1),
  ADD COLUMN intake_limit_changed_by text,
  ADD COLUMN intake_limit_changed_at timestamptz;

-- The buckets themselves, shared by every API process: one row per limited tenant, refilled and
-- taken from in one INSERT ... ON CONFLICT DO UPDATE (store/rate-limit.ts). The row lock of that
-- statement orders concurrent takes, so no advisory lock and no read-then-write race; the refill
-- is arithmetic on the stored time (tokens + elapsed * rate, capped at the burst). A tenant whose
-- limit is removed keeps its row, unread, until it is limited again.
CREATE TABLE intake_buckets (
  tenant_id    text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  tokens       double precision NOT NULL,
  refilled_at  timestamptz NOT NULL,
  -- Whether the last take found a whole token: RETURNING reads it, as the statement cannot
  -- return the row's value from before its own update.
  granted      boolean NOT NULL,
  -- The tenant's rate and burst as of the last take: copied from its row by each take, so the
  -- upsert's update reads them from EXCLUDED (ON CONFLICT DO UPDATE has no FROM).
  rate         double precision NOT NULL,
  burst        double precision NOT NULL
);
