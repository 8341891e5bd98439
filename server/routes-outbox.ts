import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OUTBOX_DISCARD_SCHEMA, OUTBOX_LIST_SCHEMA, OUTBOX_REPLAY_SCHEMA, type OutboxService } from '../services/outbox.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access, requireTenantInScope, tenantsOf } from './roles.js';
import { parseOr400 } from './problems.js';

export interface OutboxRouteDeps {
  outbox: OutboxService;
  adminApiKey: AdminKeys;
}

/** Failed notifications over HTTP: admin only, a thin shell over `services/outbox.ts`. */
export function registerOutboxRoutes(app: FastifyInstance, deps: OutboxRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  /** A notification of a tenant outside a scoped key's is "not found", as an unknown one. */
  const requireInScope = async (req: FastifyRequest, id: string) => {
    if (tenantsOf(req) !== undefined) requireTenantInScope(req, (await deps.outbox.show(id)).tenantId, `outbox row ${id}`);
  };

  app.get('/v1/admin/outbox', access('viewer', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const items = await deps.outbox.list(parseOr400(OUTBOX_LIST_SCHEMA, req.query, 'query'));
    // The store lists across tenants: a scoped key's page keeps its tenants' rows (up to `limit`).
    const tenants = tenantsOf(req);
    return { items: tenants === undefined ? items : items.filter((i) => tenants.includes(i.tenantId)) };
  });

  app.get<{ Params: { id: string } }>('/v1/admin/outbox/:id', access('viewer', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const item = await deps.outbox.show(req.params.id);
    requireTenantInScope(req, item.tenantId, `outbox row ${req.params.id}`);
    return item;
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/replay', access('operator', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(OUTBOX_REPLAY_SCHEMA, req.body, 'replay request');
    await requireInScope(req, req.params.id);
    const replayed = await deps.outbox.replay(req.params.id, operatorOf(req), reason ?? null);
    req.log.info({ outboxId: req.params.id, jobId: replayed.jobId, workflowId: replayed.workflowId }, 'failed notification replayed');
    return reply.code(202).send(replayed);
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/discard', access('operator', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(OUTBOX_DISCARD_SCHEMA, req.body, 'discard request');
    await requireInScope(req, req.params.id);
    const discarded = await deps.outbox.discard(req.params.id, operatorOf(req), reason);
    req.log.info({ outboxId: req.params.id, jobId: discarded.jobId }, 'failed notification discarded');
    return discarded;
  });
}
