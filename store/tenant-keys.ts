import type pg from 'pg';
import { apiKeyHashCandidates } from '../lib/ids.js';
import type { Db } from '../lib/db.js';

/** The tenant keys: one function per statement. Only hashes are stored, never a key. */

export interface NewTenantKey {
  tenantId: string;
  name: string;
  keyHash: string;
  keyPrefix: string | null;
  createdBy: string;
}

/**
 * Adds a live key. Fails with the unique violation of `tenant_keys_live_name` (a live key of
 * that name exists) or `tenant_keys_hash` (the key is taken), or the foreign-key violation of
 * an unknown tenant; `ifNew` makes either unique violation a no-op instead (seeding).
 * Returns whether a row was written.
 */
export async function insertTenantKey(db: Db, k: NewTenantKey, opts: { ifNew?: boolean } = {}): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO tenant_keys (tenant_id, name, key_hash, key_prefix, created_by) VALUES ($1, $2, $3, $4, $5)
     ${opts.ifNew ? 'ON CONFLICT DO NOTHING' : ''}`,
    [k.tenantId, k.name, k.keyHash, k.keyPrefix, k.createdBy],
  );
  return r.rowCount === 1;
}

/** Revokes the live key of that name unless it is the key `keyHash` (seeding a changed key). */
export async function replaceLiveKey(db: Db, tenantId: string, name: string, keyHash: string): Promise<void> {
  await db.query(
    `UPDATE tenant_keys SET revoked_at = now(), revoked_by = 'seed'
      WHERE tenant_id = $1 AND name = $2 AND revoked_at IS NULL AND key_hash <> $3`,
    [tenantId, name, keyHash],
  );
}

export async function ownerOfKeyHash(db: Db, keyHash: string): Promise<string | undefined> {
  const r = await db.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_keys WHERE key_hash = $1', [keyHash]);
  return r.rows[0]?.tenant_id;
}

/**
 * Revokes the tenant's live key of that name; false when there is none. The same statement
 * clears the key from the pre-0020 column that API processes of the previous release still
 * read during a rolling deploy, so the key opens no process of either release.
 */
export async function revokeTenantKey(db: Db, tenantId: string, name: string, revokedBy: string): Promise<boolean> {
  const r = await db.query(
    `WITH revoked AS (
       UPDATE tenant_keys SET revoked_at = now(), revoked_by = $3
        WHERE tenant_id = $1 AND name = $2 AND revoked_at IS NULL
        RETURNING tenant_id, key_hash
     ), legacy AS (
       UPDATE tenants t SET api_key_hash = NULL FROM revoked r WHERE t.id = r.tenant_id AND t.api_key_hash = r.key_hash
     )
     SELECT 1 FROM revoked`,
    [tenantId, name, revokedBy],
  );
  return r.rowCount === 1;
}

/** How stale `last_used_at` may get: reads write at most once per key and interval. */
export const LAST_USED_RESOLUTION_SECONDS = 60;

/**
 * Rewrites the stored hash of `apiKey` (live or revoked) to its current keyed hash when it is
 * stored under an older one (an older server secret, or the unkeyed SHA-256 of before keyed
 * hashes): seeding then sees the key as the one it has, and a revoked key stays revoked. The
 * pre-0020 column follows, so a revocation still clears it. Returns the current hash.
 */
export async function rehashTenantKey(db: Db, apiKey: string): Promise<string> {
  const [current, ...older] = apiKeyHashCandidates(apiKey);
  await db.query(
    `WITH k AS (
       UPDATE tenant_keys SET key_hash = $1 WHERE key_hash = ANY($2::text[]) RETURNING tenant_id
     )
     UPDATE tenants SET api_key_hash = $1 WHERE api_key_hash = ANY($2::text[]) AND id IN (SELECT tenant_id FROM k)`,
    [current, older],
  );
  return current!;
}

/**
 * The tenant of a live bearer key (looked up by its hash; the raw key is never stored), read
 * afresh on every request so that a revocation holds at once in every API process: no cache.
 *
 * The key is looked up under every hash it may be stored with (`apiKeyHashCandidates`: the
 * current secret's, older secrets', the unkeyed SHA-256 of before keyed hashes); a key found
 * under an older one is rewritten to the current hash by this same statement (first use).
 *
 * The same statement touches `last_used_at` when it is older than a minute, so a busy key
 * costs one row write a minute, not one per request. SKIP LOCKED: a request that finds
 * another one touching the row leaves it to that one instead of waiting for its lock.
 */
export async function tenantForApiKey(db: pg.Pool, apiKey: string): Promise<string | undefined> {
  const [current, ...older] = apiKeyHashCandidates(apiKey);
  const r = await db.query<{ tenant_id: string }>(
    `WITH k AS (
       SELECT id, tenant_id, key_hash FROM tenant_keys WHERE key_hash = ANY($1::text[]) AND revoked_at IS NULL
     ), touched AS (
       UPDATE tenant_keys SET last_used_at = now(), key_hash = $3
        WHERE id IN (SELECT s.id FROM tenant_keys s JOIN k ON k.id = s.id
                      WHERE s.key_hash <> $3 OR s.last_used_at IS NULL OR s.last_used_at < now() - make_interval(secs => $2)
                        FOR UPDATE OF s SKIP LOCKED)
        RETURNING tenant_id
     ), legacy AS (
       UPDATE tenants t SET api_key_hash = $3 FROM k WHERE t.id = k.tenant_id AND t.api_key_hash = k.key_hash AND k.key_hash <> $3
     )
     SELECT tenant_id FROM k`,
    [[current, ...older], LAST_USED_RESOLUTION_SECONDS, current],
  );
  return r.rows[0]?.tenant_id;
}
