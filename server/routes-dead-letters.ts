import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../lib/errors.js';
import type { DeadLetterFilter } from '../store/dead-letters.js';
import { ADD_SCHEMA, DISCARD_SCHEMA, LIST_SCHEMA, REPLAY_SCHEMA, STOP_SCHEMA, type DeadLetterService } from '../services/dead-letters.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { parseOr400 } from './problems.js';

export interface DeadLetterRouteDeps {
  deadLetters: DeadLetterService;
  adminApiKey: AdminKeys;
}

const REPLAY_ID = /^replay-[0-9a-f-]{36}$/;

/** The dead-letter API over HTTP: admin only, a thin shell over `services/dead-letters.ts`. */
export function registerDeadLetterRoutes(app: FastifyInstance, deps: DeadLetterRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  app.get('/v1/dead-letters', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parseOr400(LIST_SCHEMA, req.query, 'query');
    return { deadLetters: await deps.deadLetters.list(q as DeadLetterFilter), limit: q.limit, offset: q.offset };
  });

  app.get<{ Params: { id: string } }>('/v1/dead-letters/:id', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    return deps.deadLetters.show(req.params.id);
  });

  app.post('/v1/dead-letters/replay', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const body = parseOr400(REPLAY_SCHEMA, req.body, 'replay request');
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

  app.get<{ Params: { replayId: string } }>('/v1/dead-letters/replays/:replayId', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    if (!REPLAY_ID.test(req.params.replayId)) throw new NotFoundError(`replay ${req.params.replayId} not found`);
    return deps.deadLetters.progress(req.params.replayId);
  });

  app.post<{ Params: { replayId: string; command: string } }>('/v1/dead-letters/replays/:replayId/:command', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { replayId, command } = req.params;
    if (!REPLAY_ID.test(replayId) || !['pause', 'resume', 'stop', 'add'].includes(command))
      throw new NotFoundError(`no route POST ${req.url}`);
    const actor = operatorOf(req);
    if (command === 'pause' || command === 'resume') await deps.deadLetters.steer(replayId, { command }, actor);
    else if (command === 'stop')
      await deps.deadLetters.steer(replayId, { command, reason: parseOr400(STOP_SCHEMA, req.body, 'stop request').reason }, actor);
    else await deps.deadLetters.steer(replayId, { command: 'add', ids: parseOr400(ADD_SCHEMA, req.body, 'add request').ids }, actor);
    req.log.info({ replayId, command, actor }, 'replay signalled');
    return reply.code(202).send({ replayId, command, accepted: true });
  });

  app.post<{ Params: { id: string } }>('/v1/dead-letters/:id/discard', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(DISCARD_SCHEMA, req.body, 'discard request');
    const actor = operatorOf(req);
    const { view, discardedNow } = await deps.deadLetters.discard(req.params.id, reason, actor);
    if (discardedNow) req.log.info({ deadLetterId: req.params.id, actor }, 'dead letter discarded');
    return view;
  });
}
