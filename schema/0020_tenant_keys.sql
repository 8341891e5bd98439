-- Tenants are data (issue 36 §5): each tenant has several named API keys, so a key can be
-- rotated (add the new one, move clients, revoke the old one) without an outage, and revoked
-- at once. A key is stored as its hash only (`apiKeyHash`, lib/ids.ts: the scheme
-- `tenants.api_key_hash` used, so every existing key keeps working) plus, for keys the product
-- generated (`dj_...`), a short visible prefix that support can match against what a client
-- shows them; the prefix alone does not authenticate.
CREATE TABLE tenant_keys (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id     text NOT NULL REFERENCES tenants (id),
  name          text NOT NULL,
  key_hash      text NOT NULL,
  -- `dj_` and the first 8 characters after it; NULL for keys chosen by hand (seeded, migrated),
  -- where a prefix would show a large part of a short key.
  key_prefix    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- Touched at most about once a minute per key (store/tenants.ts): reads do not write per request.
  last_used_at  timestamptz,
  revoked_at    timestamptz,
  -- Who acted (the operator an admin key names; `seed` for SEED_TENANTS, `migration` here): the
  -- audit of a key is its own row, kept after revocation.
  created_by    text NOT NULL,
  revoked_by    text
);
-- Authentication looks a bearer key up here on every request; a hash names one key ever, even
-- once revoked (a revoked key can never come back as another tenant's or another name's key).
CREATE UNIQUE INDEX tenant_keys_hash ON tenant_keys (key_hash);
-- One live key per name and tenant: revoking by name is unambiguous, and a revoked name can be
-- used again for its replacement.
CREATE UNIQUE INDEX tenant_keys_live_name ON tenant_keys (tenant_id, name) WHERE revoked_at IS NULL;

-- Every existing tenant keeps its key, now named `default`.
INSERT INTO tenant_keys (tenant_id, name, key_hash, created_at, created_by)
SELECT id, 'default', api_key_hash, created_at, 'migration' FROM tenants WHERE api_key_hash IS NOT NULL;

-- Who created a tenant (NULL: before this migration).
ALTER TABLE tenants ADD COLUMN created_by text;

-- No longer read or written by this release. Kept (nullable) so that API processes of the
-- previous release still authenticate during a rolling deploy; revoking a key clears it here
-- too (store/tenant-keys.ts), so a revoked key opens no process of either release.
ALTER TABLE tenants ALTER COLUMN api_key_hash DROP NOT NULL;
