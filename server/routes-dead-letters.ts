import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../lib/errors.js';
import type { DeadLetterFilter } from '../store/dead-letters.js';
import { ADD_SCHEMA, DISCARD_SCHEMA, LIST_SCHEMA, REPLAY_SCHEMA, STOP_SCHEMA, type DeadLetterService } from '../services/dead-letters.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access, principalOf, requireTenantInScope, scopedTenant, scopeQuery, tenantsOf } from './roles.js';
import { parseOr400 } from './problems.js';

export interface DeadLetterRouteDeps {
  deadLetters: DeadLetterService;
  adminApiKey: AdminKeys;
}

const REPLAY_ID = /^replay-[0-9a-f-]{36}$/;

/** The dead-letter API over HTTP: admin only, a thin shell over `services/dead-letters.ts`. */
export function registerDeadLetterRoutes(app: FastifyInstance, deps: DeadLetterRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  /** A key scoped to tenants names only their dead letters: any other is "not found", as an unknown one. */
  async function requireIdsInScope(req: FastifyRequest, ids: readonly string[]): Promise<void> {
    const tenants = tenantsOf(req);
    if (tenants === undefined) return;
    const unique = [...new Set(ids)];
    const rows = await deps.deadLetters.list({ ids: unique, limit: unique.length } as DeadLetterFilter);
    const outside = unique.filter((id) => !rows.some((r) => r.id === id && tenants.includes(r.tenantId)));
    if (outside.length > 0) throw new NotFoundError(`no dead letter ${outside.slice(0, 10).join(', ')}`);
  }

  /**
   * A replay spans the dead letters it was given, of any tenant: a key scoped to tenants reads
   * and steers only the replays its operator requested (which it could only fill with its own).
   */
  async function requireOwnReplay(req: FastifyRequest, replayId: string): Promise<void> {
    if (tenantsOf(req) === undefined) return;
    const p = await deps.deadLetters.progress(replayId);
    if (p.requestedBy !== principalOf(req)!.operator) throw new NotFoundError(`replay ${replayId} not found`);
  }

  app.get('/v1/dead-letters', access('viewer', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parseOr400(LIST_SCHEMA, scopeQuery(req, req.query), 'query');
    return { deadLetters: await deps.deadLetters.list(q as DeadLetterFilter), limit: q.limit, offset: q.offset };
  });

  app.get<{ Params: { id: string } }>('/v1/dead-letters/:id', access('viewer', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const d = await deps.deadLetters.show(req.params.id);
    requireTenantInScope(req, d.tenantId, `dead letter ${req.params.id}`);
    return d;
  });

  app.post('/v1/dead-letters/replay', access('operator', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const body = parseOr400(REPLAY_SCHEMA, req.body, 'replay request');
    if (body.ids) await requireIdsInScope(req, body.ids);
    if (body.filter && tenantsOf(req) !== undefined) body.filter.tenantId = scopedTenant(req, body.filter.tenantId, 'filter.tenantId');
    const actor = operatorOf(req);
    const r = await deps.deadLetters.replay(body, actor);
    if (r.dryRun) return reply.code(200).send(r);
    req.log.info({ replayId: r.replayId, count: r.count, actor }, 'replay requested');
    const statusUrl = `/v1/dead-letters/replays/${r.replayId}`;
    const { dryRun: _d, ...started } = r;
    return reply
      .code(202)
      .header('Location', statusUrl)
      .send({ ...started, statusUrl });
  });

  app.get<{ Params: { replayId: string } }>('/v1/dead-letters/replays/:replayId', access('viewer', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    if (!REPLAY_ID.test(req.params.replayId)) throw new NotFoundError(`replay ${req.params.replayId} not found`);
    const progress = await deps.deadLetters.progress(req.params.replayId);
    if (tenantsOf(req) !== undefined && progress.requestedBy !== principalOf(req)!.operator)
      throw new NotFoundError(`replay ${req.params.replayId} not found`);
    return progress;
  });

  app.post<{ Params: { replayId: string; command: string } }>(
    '/v1/dead-letters/replays/:replayId/:command',
    access('operator', 'checked'),
    async (req, reply) => {
      if (!admin(req, reply)) return reply;
      const { replayId, command } = req.params;
      if (!REPLAY_ID.test(replayId) || !['pause', 'resume', 'stop', 'add'].includes(command))
        throw new NotFoundError(`no route POST ${req.url}`);
      const actor = operatorOf(req);
      await requireOwnReplay(req, replayId);
      if (command === 'pause' || command === 'resume') await deps.deadLetters.steer(replayId, { command }, actor);
      else if (command === 'stop')
        await deps.deadLetters.steer(replayId, { command, reason: parseOr400(STOP_SCHEMA, req.body, 'stop request').reason }, actor);
      else {
        const { ids } = parseOr400(ADD_SCHEMA, req.body, 'add request');
        await requireIdsInScope(req, ids);
        await deps.deadLetters.steer(replayId, { command: 'add', ids }, actor);
      }
      req.log.info({ replayId, command, actor }, 'replay signalled');
      return reply.code(202).send({ replayId, command, accepted: true });
    },
  );

  app.post<{ Params: { id: string } }>('/v1/dead-letters/:id/discard', access('operator', 'checked'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(DISCARD_SCHEMA, req.body, 'discard request');
    const actor = operatorOf(req);
    if (tenantsOf(req) !== undefined)
      requireTenantInScope(req, (await deps.deadLetters.show(req.params.id)).tenantId, `dead letter ${req.params.id}`);
    const { view, discardedNow } = await deps.deadLetters.discard(req.params.id, reason, actor);
    if (discardedNow) req.log.info({ deadLetterId: req.params.id, actor }, 'dead letter discarded');
    return view;
  });
}
