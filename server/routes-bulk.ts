import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../lib/errors.js';
import { CLUSTER_QUERY, RERUN_REQUEST, STOP_REQUEST, type BulkActionService } from '../services/bulk-actions.js';
import { listClusters } from '../services/failure-clusters.js';
import type pg from 'pg';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';
import { access } from './roles.js';

export interface BulkRouteDeps {
  pool: pg.Pool;
  bulk: BulkActionService;
  adminApiKey: AdminKeys;
}

const BULK_ID = /^bulk-[0-9a-f-]{36}$/;
const LIST_QUERY = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }).strict();
const SHOW_QUERY = z.object({ items: z.coerce.number().int().min(0).max(1_000).default(200) }).strict();

/**
 * Bulk actions, reruns and failure clusters over HTTP: admin only, a thin shell over
 * `services/bulk-actions.ts` and `services/failure-clusters.ts`. Every change names its operator
 * (the key's), in the log and in the audit rows.
 */
export function registerBulkRoutes(app: FastifyInstance, deps: BulkRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  app.post('/v1/admin/bulk-actions', access('operator'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const actor = operatorOf(req);
    const r = await deps.bulk.request(req.body ?? {}, actor);
    if (r.dryRun) return reply.code(200).send(r);
    req.log.info(
      { action: r.action, count: r.count, actor, ...('bulkId' in r ? { bulkId: r.bulkId } : { replayId: r.replayId }) },
      'bulk action requested',
    );
    return reply.code(202).header('Location', r.statusUrl).send(r);
  });

  app.get('/v1/admin/bulk-actions', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parseOr400(LIST_QUERY, req.query, 'query');
    return { bulkActions: await deps.bulk.list(q.limit) };
  });

  app.get<{ Params: { bulkId: string } }>('/v1/admin/bulk-actions/:bulkId', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    if (!BULK_ID.test(req.params.bulkId)) throw new NotFoundError(`bulk action ${req.params.bulkId} not found`);
    const q = parseOr400(SHOW_QUERY, req.query, 'query');
    return deps.bulk.show(req.params.bulkId, { items: q.items });
  });

  app.post<{ Params: { bulkId: string; command: string } }>(
    '/v1/admin/bulk-actions/:bulkId/:command',
    access('operator'),
    async (req, reply) => {
      if (!admin(req, reply)) return reply;
      const { bulkId, command } = req.params;
      if (!BULK_ID.test(bulkId) || !['pause', 'resume', 'stop'].includes(command)) throw new NotFoundError(`no route POST ${req.url}`);
      const actor = operatorOf(req);
      const reason = command === 'stop' ? parseOr400(STOP_REQUEST, req.body ?? {}, 'stop request').reason : undefined;
      await deps.bulk.steer(bulkId, { command: command as 'pause' | 'resume' | 'stop', ...(reason ? { reason } : {}) }, actor);
      req.log.info({ bulkId, command, actor }, 'bulk action signalled');
      return reply.code(202).send({ bulkId, command, accepted: true });
    },
  );

  app.post<{ Params: { jobId: string } }>('/v1/admin/jobs/:jobId/rerun', access('operator'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const body = parseOr400(RERUN_REQUEST, req.body ?? {}, 'rerun request');
    const actor = operatorOf(req);
    const r = await deps.bulk.rerun(req.params.jobId, body, actor);
    if (r.dryRun) return r;
    req.log.info({ jobId: req.params.jobId, rerunJobId: r.rerunJobId, fromStep: r.fromStep, actor }, 'job rerun');
    return reply.code(202).header('Location', `/v1/admin/jobs/${r.rerunJobId}`).send(r);
  });

  app.get('/v1/admin/dead-letters/clusters', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parseOr400(CLUSTER_QUERY, req.query, 'query');
    return listClusters(deps.pool, {
      ...(q.state ? { states: [q.state] } : {}),
      ...(q.tenantId ? { tenantId: q.tenantId } : {}),
      ...(q.type ? { jobType: q.type } : {}),
    });
  });
}
