import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { DELIVERY_LIST_SCHEMA, listDeliveries } from '../services/webhook-delivery-list.js';
import { requireAdmin, type AdminKeys } from './auth.js';
import { access } from './roles.js';
import { parseOr400 } from './problems.js';

export interface WebhookDeliveryRouteDeps {
  pool: pg.Pool;
  adminApiKey: AdminKeys;
}

/**
 * `GET /v1/admin/webhook-deliveries?source&event&outcome&limit&cursor`: a viewer reads what each
 * inbound delivery did (never its data). Sources span tenants: a scoped key is refused (`all`).
 */
export function registerWebhookDeliveryRoutes(app: FastifyInstance, deps: WebhookDeliveryRouteDeps): void {
  app.get('/v1/admin/webhook-deliveries', access('viewer'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    return listDeliveries(deps.pool, parseOr400(DELIVERY_LIST_SCHEMA, req.query, 'query'));
  });
}
