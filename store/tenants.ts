import type pg from 'pg';
import { apiKeyHash } from '../lib/ids.js';
import { withTransaction, type Db } from '../lib/db.js';
import { insertTenantKey, ownerOfKeyHash, rehashTenantKey, replaceLiveKey } from './tenant-keys.js';

/** The name of the key `SEED_TENANTS` gives its tenant. */
export const SEED_KEY_NAME = 'seed';

/** Creates a tenant; false when one with that ID exists (nothing changed). */
export async function insertTenant(db: Db, tenantId: string, createdBy: string): Promise<boolean> {
  const r = await db.query('INSERT INTO tenants (id, created_by) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [tenantId, createdBy]);
  return r.rowCount === 1;
}

/**
 * Whether the tenant may submit `priority: high` (F11); undefined for an unknown tenant. Read
 * only for high-priority submits, so the common submit pays no extra statement.
 */
export async function mayUseHighPriority(db: Db, tenantId: string): Promise<boolean | undefined> {
  const r = await db.query<{ may: boolean }>('SELECT may_use_high_priority AS may FROM tenants WHERE id = $1', [tenantId]);
  return r.rows[0]?.may;
}

/** Grants or withdraws `priority: high`; false for an unknown tenant. Records who and when. */
export async function setHighPriority(db: Db, tenantId: string, allowed: boolean, changedBy: string): Promise<boolean> {
  const r = await db.query(
    `UPDATE tenants SET may_use_high_priority = $2, high_priority_changed_by = $3, high_priority_changed_at = now() WHERE id = $1`,
    [tenantId, allowed, changedBy],
  );
  return r.rowCount === 1;
}

export async function tenantExists(db: Db, tenantId: string): Promise<boolean> {
  const r = await db.query('SELECT 1 FROM tenants WHERE id = $1', [tenantId]);
  return r.rowCount === 1;
}

/**
 * `SEED_TENANTS` (dev, tests): the tenant exists and `apiKey` is its live key named `seed`.
 * A changed seed key replaces the previous seed key (revoked), as the old single-key column
 * did; a seed key an operator revoked stays revoked (its hash is taken, so nothing is
 * inserted). Several processes may seed at once: each statement is idempotent.
 * `highPriority` (SEED_HIGH_PRIORITY_TENANTS) lets the tenant submit `priority: high`.
 */
export async function upsertTenant(db: pg.Pool, tenantId: string, apiKey: string, opts: { highPriority?: boolean } = {}): Promise<void> {
  await withTransaction(db, async (tx) => {
    // A seed key stored under an older hash is this key: rewritten first, it is neither revoked
    // as "changed" nor inserted again (and one an operator revoked stays revoked).
    const keyHash = await rehashTenantKey(tx, apiKey);
    await insertTenant(tx, tenantId, SEED_KEY_NAME);
    // Seeding grants high priority, never withdraws it: an operator's grant survives a restart.
    if (opts.highPriority)
      await tx.query(
        `UPDATE tenants SET may_use_high_priority = true, high_priority_changed_by = $2, high_priority_changed_at = now()
          WHERE id = $1 AND NOT may_use_high_priority`,
        [tenantId, SEED_KEY_NAME],
      );
    await replaceLiveKey(tx, tenantId, SEED_KEY_NAME, keyHash);
    await insertTenantKey(tx, { tenantId, name: SEED_KEY_NAME, keyHash, keyPrefix: null, createdBy: SEED_KEY_NAME }, { ifNew: true });
  });
  const owner = await ownerOfKeyHash(db, apiKeyHash(apiKey));
  if (owner !== tenantId) throw new Error(`the seed key of tenant "${tenantId}" is already a key of tenant "${owner}"`);
}

export interface TenantKeyInfo {
  name: string;
  /** `dj_live_` (`dj_` for keys generated before 0.x: lib/ids.ts) and the next 8 characters of a generated key; null for keys chosen by hand. */
  prefix: string | null;
  createdAt: string;
  createdBy: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
}

export interface TenantInfo {
  id: string;
  createdAt: string;
  /** May submit `priority: high` (default false; an operator grants it). */
  mayUseHighPriority: boolean;
  /** Intake rate limit, submits per second; null: none (the default). */
  intakeRatePerSecond: number | null;
  /** The bucket's size: submits accepted at once; null: one second of the rate. */
  intakeBurst: number | null;
  /** Keys that authenticate now. */
  liveKeys: number;
  /** Every key, live and revoked, oldest first: metadata only, never a hash. */
  keys: TenantKeyInfo[];
}

const KEY_JSON = `json_build_object('name', k.name, 'prefix', k.key_prefix,
  'createdAt', to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'createdBy', k.created_by,
  'lastUsedAt', to_char(k.last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'revokedAt', to_char(k.revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'revokedBy', k.revoked_by)`;

/** Every tenant (or one) with its keys' metadata. */
export async function listTenants(db: Db, tenantId?: string): Promise<TenantInfo[]> {
  const r = await db.query<{
    id: string;
    created_at: Date;
    may: boolean;
    rate: number | null;
    burst: number | null;
    live_keys: number;
    keys: TenantKeyInfo[];
  }>(
    `SELECT t.id, t.created_at, t.may_use_high_priority AS may, t.intake_rate_per_second AS rate, t.intake_burst AS burst,
            count(k.id) FILTER (WHERE k.revoked_at IS NULL)::int AS live_keys,
            coalesce(json_agg(${KEY_JSON} ORDER BY k.created_at, k.id) FILTER (WHERE k.id IS NOT NULL), '[]') AS keys
       FROM tenants t LEFT JOIN tenant_keys k ON k.tenant_id = t.id
      WHERE $1::text IS NULL OR t.id = $1
      GROUP BY t.id ORDER BY t.id`,
    [tenantId ?? null],
  );
  return r.rows.map((x) => ({
    id: x.id,
    createdAt: x.created_at.toISOString(),
    mayUseHighPriority: x.may,
    intakeRatePerSecond: x.rate,
    intakeBurst: x.burst,
    liveKeys: x.live_keys,
    keys: x.keys,
  }));
}

/** Every tenant gets its own job per window (per-tenant digests). */
export async function listTenantIds(db: Db): Promise<string[]> {
  const r = await db.query<{ id: string }>('SELECT id FROM tenants ORDER BY id');
  return r.rows.map((x) => x.id);
}
