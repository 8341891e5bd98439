import type pg from 'pg';
import { apiKeyHash } from '../lib/ids.js';
import type { Db } from '../lib/db.js';

export async function upsertTenant(db: pg.Pool, tenantId: string, apiKey: string): Promise<void> {
  await db.query(
    `INSERT INTO tenants (id, api_key_hash) VALUES ($1, $2)
     ON CONFLICT (id) DO UPDATE SET api_key_hash = excluded.api_key_hash`,
    [tenantId, apiKeyHash(apiKey)],
  );
}

/** Looks a bearer key up by its hash (the raw key is never stored). */
export async function tenantForApiKey(db: pg.Pool, apiKey: string): Promise<string | undefined> {
  const r = await db.query<{ id: string }>('SELECT id FROM tenants WHERE api_key_hash = $1', [apiKeyHash(apiKey)]);
  return r.rows[0]?.id;
}

/** Every tenant gets its own job per window (per-tenant digests). */
export async function listTenantIds(db: Db): Promise<string[]> {
  const r = await db.query<{ id: string }>('SELECT id FROM tenants ORDER BY id');
  return r.rows.map((x) => x.id);
}
