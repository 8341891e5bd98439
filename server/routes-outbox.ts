import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OUTBOX_DISCARD_SCHEMA, OUTBOX_LIST_SCHEMA, OUTBOX_REPLAY_SCHEMA, type OutboxService } from '../services/outbox.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';

export interface OutboxRouteDeps {
  outbox: OutboxService;
  adminApiKey: AdminKeys;
}

/** Failed notifications over HTTP: admin only, a thin shell over `services/outbox.ts`. */
export function registerOutboxRoutes(app: FastifyInstance, deps: OutboxRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  app.get('/v1/admin/outbox', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    return { items: await deps.outbox.list(parseOr400(OUTBOX_LIST_SCHEMA, req.query, 'query')) };
  });

  app.get<{ Params: { id: string } }>('/v1/admin/outbox/:id', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    return deps.outbox.show(req.params.id);
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/replay', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(OUTBOX_REPLAY_SCHEMA, req.body, 'replay request');
    const replayed = await deps.outbox.replay(req.params.id, operatorOf(req), reason ?? null);
    req.log.info({ outboxId: req.params.id, jobId: replayed.jobId, workflowId: replayed.workflowId }, 'failed notification replayed');
    return reply.code(202).send(replayed);
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/discard', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(OUTBOX_DISCARD_SCHEMA, req.body, 'discard request');
    const discarded = await deps.outbox.discard(req.params.id, operatorOf(req), reason);
    req.log.info({ outboxId: req.params.id, jobId: discarded.jobId }, 'failed notification discarded');
    return discarded;
  });
}
