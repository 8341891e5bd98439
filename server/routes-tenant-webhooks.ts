import type { FastifyInstance } from 'fastify';
import { PUT_COMPLETION_WEBHOOK_SCHEMA, type TenantWebhooks } from '../services/tenant-webhooks.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';
import { access } from './roles.js';

export interface TenantWebhookRouteDeps {
  webhooks: TenantWebhooks;
  adminApiKey: AdminKeys;
}

/**
 * A tenant's completion webhook (admin). The PUT answer is the only place the signing secret
 * appears (no cache may keep it); logs name the tenant, the operator and the secret's prefix.
 */
export function registerTenantWebhookRoutes(app: FastifyInstance, deps: TenantWebhookRouteDeps): void {
  const path = '/v1/admin/tenants/:id/completion-webhook';
  app.put<{ Params: { id: string } }>(path, access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { url } = parseOr400(PUT_COMPLETION_WEBHOOK_SCHEMA, req.body ?? {}, 'request body');
    const actor = operatorOf(req);
    const set = await deps.webhooks.put(req.params.id, url, actor);
    req.log.info({ actor, tenantId: set.tenantId, secretPrefix: set.secretPrefix }, 'completion webhook set');
    return reply.header('Cache-Control', 'no-store').send(set);
  });

  app.get<{ Params: { id: string } }>(path, access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    return deps.webhooks.get(req.params.id);
  });

  app.delete<{ Params: { id: string } }>(path, access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    await deps.webhooks.remove(req.params.id);
    req.log.info({ actor: operatorOf(req), tenantId: req.params.id }, 'completion webhook removed');
    return reply.code(204).send();
  });
}
