import type { Db } from '../lib/db.js';

/** The sealed signing secret's purpose (lib/sealed-secret.ts): the API seals with it, the worker opens with it. */
export const WEBHOOK_SECRET_PURPOSE = 'completion-webhook-secret';

/** A tenant's completion webhook as stored: the signing secret only sealed (lib/sealed-secret.ts). */
export interface TenantWebhookRow {
  tenant_id: string;
  url: string;
  secret_sealed: Buffer;
  secret_prefix: string;
  created_by: string | null;
  updated_at: Date;
}

/** Sets (or replaces: URL and secret together) the tenant's endpoint. Undefined when the tenant does not exist. */
export async function putTenantWebhook(
  db: Db,
  w: { tenantId: string; url: string; secretSealed: Buffer; secretPrefix: string; by: string },
): Promise<TenantWebhookRow | undefined> {
  const r = await db.query<TenantWebhookRow>(
    `INSERT INTO tenant_completion_webhooks (tenant_id, url, secret_sealed, secret_prefix, created_by)
     SELECT id, $2, $3, $4, $5 FROM tenants WHERE id = $1
     ON CONFLICT (tenant_id) DO UPDATE
        SET url = EXCLUDED.url, secret_sealed = EXCLUDED.secret_sealed, secret_prefix = EXCLUDED.secret_prefix,
            created_by = EXCLUDED.created_by, updated_at = now()
     RETURNING *`,
    [w.tenantId, w.url, w.secretSealed, w.secretPrefix, w.by],
  );
  return r.rows[0];
}

export async function getTenantWebhook(db: Db, tenantId: string): Promise<TenantWebhookRow | undefined> {
  const r = await db.query<TenantWebhookRow>('SELECT * FROM tenant_completion_webhooks WHERE tenant_id = $1', [tenantId]);
  return r.rows[0];
}

/** Whether the tenant has an endpoint: a job type's completion webhook is written to the outbox only then. */
export async function hasTenantWebhook(db: Db, tenantId: string): Promise<boolean> {
  const r = await db.query('SELECT 1 FROM tenant_completion_webhooks WHERE tenant_id = $1', [tenantId]);
  return (r.rowCount ?? 0) > 0;
}

export async function deleteTenantWebhook(db: Db, tenantId: string): Promise<boolean> {
  const r = await db.query('DELETE FROM tenant_completion_webhooks WHERE tenant_id = $1', [tenantId]);
  return (r.rowCount ?? 0) > 0;
}
