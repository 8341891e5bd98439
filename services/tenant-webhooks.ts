/**
 * A tenant's completion webhook (issue 37 §2), set by an admin: the URL, and a signing secret
 * (`whsec_…`, Standard Webhooks) generated here and shown once, in the answer that creates it;
 * stored only sealed (lib/sealed-secret.ts), never logged or returned again. Setting it again
 * replaces both (the old secret stops signing at once: the receiver takes the new one first).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../lib/errors.js';
import { sealSecret } from '../lib/sealed-secret.js';
import { webhookUrlProblem } from '../lib/webhook-url.js';
import {
  deleteTenantWebhook,
  getTenantWebhook,
  putTenantWebhook,
  WEBHOOK_SECRET_PURPOSE,
  type TenantWebhookRow,
} from '../store/tenant-webhooks.js';

export const PUT_COMPLETION_WEBHOOK_SCHEMA = z
  .object({ url: z.string({ error: 'url is required: the http(s) endpoint that receives job.succeeded events' }) })
  .strict();

export interface CompletionWebhookView {
  tenantId: string;
  url: string;
  /** The secret's first characters, to tell which one a receiver holds. */
  secretPrefix: string;
  updatedAt: string;
  updatedBy: string | null;
}

const view = (r: TenantWebhookRow): CompletionWebhookView => ({
  tenantId: r.tenant_id,
  url: r.url,
  secretPrefix: r.secret_prefix,
  updatedAt: r.updated_at.toISOString(),
  updatedBy: r.created_by,
});

export function createTenantWebhooks(pool: pg.Pool) {
  return {
    /** Sets or replaces the endpoint; the answer holds the new secret, the only time it is shown. */
    async put(tenantId: string, url: string, by: string): Promise<CompletionWebhookView & { secret: string }> {
      const problem = webhookUrlProblem(url);
      if (problem) throw new ValidationError('invalid request body', [{ path: 'url', message: problem }]);
      // 24 random bytes, base64: the secret size the Standard Webhooks libraries generate.
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const row = await putTenantWebhook(pool, {
        tenantId,
        url,
        secretSealed: sealSecret(secret, WEBHOOK_SECRET_PURPOSE),
        secretPrefix: secret.slice(0, 10),
        by,
      });
      if (!row) throw new NotFoundError(`tenant "${tenantId}" not found`);
      return { ...view(row), secret };
    },
    async get(tenantId: string): Promise<CompletionWebhookView> {
      const row = await getTenantWebhook(pool, tenantId);
      if (!row) throw new NotFoundError(`tenant "${tenantId}" has no completion webhook`);
      return view(row);
    },
    async remove(tenantId: string): Promise<void> {
      if (!(await deleteTenantWebhook(pool, tenantId))) throw new NotFoundError(`tenant "${tenantId}" has no completion webhook`);
    },
  };
}

export type TenantWebhooks = ReturnType<typeof createTenantWebhooks>;
