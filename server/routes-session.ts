import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { pgOr503 } from '../lib/db.js';
import { operatorOf } from './auth.js';
import { access, principalOf, ROLE_RIGHTS, roleAllows, ROLES } from './roles.js';
import { sessionToken, type Sessions } from './sessions.js';
import { parseOr400 } from './problems.js';

const NO_BODY = z.object({}).strict();

/**
 * `POST /v1/admin/session`: the console trades the pasted key (Bearer, never a session: a
 * session cannot renew itself past its absolute timeout) for a session cookie.
 * `DELETE /v1/admin/session`: sign-out, ended server-side.
 */
export function registerSessionRoutes(app: FastifyInstance, deps: { sessions: Sessions }): void {
  app.post('/v1/admin/session', access('viewer', 'any', 'key'), async (req, reply) => {
    parseOr400(NO_BODY, req.body, 'session request');
    const p = principalOf(req)!;
    const { token, expiresAt } = await pgOr503(() =>
      deps.sessions.open({ operator: operatorOf(req), keyHash: p.keyHash, keyId: p.keyId, remoteAddr: req.ip ?? null }),
    );
    deps.sessions.setCookie(reply, token);
    req.log.info({ operator: p.operator, role: p.role, keyId: p.keyId }, 'console session opened');
    return reply.code(201).send({
      operator: p.operator,
      role: p.role,
      tenants: p.tenants ?? null,
      may: ROLES.filter((r) => roleAllows(p.role, r)).map((r) => ROLE_RIGHTS[r]),
      expiresAt: expiresAt.toISOString(),
      idleTimeoutSeconds: deps.sessions.idleSeconds,
    });
  });

  app.delete('/v1/admin/session', access('viewer', 'any'), async (req, reply) => {
    const token = sessionToken(req);
    const ended = token !== undefined && (await pgOr503(() => deps.sessions.end(token)));
    deps.sessions.clearCookie(reply);
    if (ended) req.log.info({ operator: principalOf(req)!.operator }, 'console session ended');
    return reply.code(204).send();
  });
}
