import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ScheduleAdmin } from '../services/schedule-admin.js';
import { BACKFILL_SCHEMA, PAUSE_SCHEMA, TRIGGER_SCHEMA, WINDOWS_QUERY_SCHEMA } from '../services/schedule-admin-schemas.js';
import { keyIdOf, operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access } from './roles.js';
import { parseOr400 } from './problems.js';

export interface ScheduleRouteDeps {
  schedules: ScheduleAdmin;
  adminApiKey: AdminKeys;
}

const NO_QUERY = z.object({}).strict();
type Named = { Params: { name: string } };

/**
 * The scheduled job types' Schedules (issue 38 §8): a viewer reads them and their windows; an
 * operator pauses, unpauses, triggers and backfills, each audited under the operator's name.
 * They span every tenant, so a key scoped to tenants is refused (`all`).
 */
export function registerScheduleRoutes(app: FastifyInstance, deps: ScheduleRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);
  const actor = (req: FastifyRequest) => ({ operator: operatorOf(req), keyId: keyIdOf(req) });

  app.get('/v1/admin/schedules', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    parseOr400(NO_QUERY, req.query, 'query');
    return deps.schedules.list();
  });

  app.get<Named>('/v1/admin/schedules/:name', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    parseOr400(NO_QUERY, req.query, 'query');
    return deps.schedules.show(req.params.name);
  });

  app.get<Named>('/v1/admin/schedules/:name/windows', access('viewer'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    return deps.schedules.windows(req.params.name, parseOr400(WINDOWS_QUERY_SCHEMA, req.query, 'query'));
  });

  for (const action of ['pause', 'unpause'] as const)
    app.post<Named>(`/v1/admin/schedules/:name/${action}`, access('operator'), async (req, reply) => {
      if (!admin(req, reply)) return reply;
      const { reason } = parseOr400(PAUSE_SCHEMA, req.body, `${action} request`);
      const who = actor(req);
      const out = await deps.schedules[action](req.params.name, who, reason);
      req.log.info({ actor: who.operator, schedule: req.params.name, action }, `schedule ${action}d`);
      return out;
    });

  app.post<Named>('/v1/admin/schedules/:name/trigger', access('operator'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parseOr400(TRIGGER_SCHEMA, req.body, 'trigger request');
    const who = actor(req);
    const out = await deps.schedules.trigger(req.params.name, who, reason ?? null);
    req.log.info({ actor: who.operator, schedule: req.params.name, windowStart: out.window.start }, 'schedule triggered');
    return reply.code(202).send(out);
  });

  app.post<Named>('/v1/admin/schedules/:name/backfill', access('operator'), async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const body = parseOr400(BACKFILL_SCHEMA, req.body, 'backfill request');
    const who = actor(req);
    const out = await deps.schedules.backfill(req.params.name, who, body);
    req.log.info(
      { actor: who.operator, schedule: req.params.name, from: body.from, to: body.to, windows: out.windows.length },
      'schedule backfilled',
    );
    return reply.code(202).send(out);
  });
}
