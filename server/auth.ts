import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { pgOr503 } from '../lib/db.js';
import { ValidationError } from '../lib/errors.js';
import { tenantForApiKey } from '../store/tenants.js';
import { problem, sendProblem } from './problems.js';

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

const unauthorized = (detail: string) => problem(401, 'unauthorized', 'Unauthorized', detail);

/** Resolves the tenant from its bearer key, or answers 401 and returns undefined. */
export async function requireTenant(pool: pg.Pool, req: FastifyRequest, reply: FastifyReply): Promise<string | undefined> {
  const key = bearer(req);
  if (!key) {
    sendProblem(reply.header('WWW-Authenticate', 'Bearer'), unauthorized('send Authorization: Bearer <tenant api key>'));
    return undefined;
  }
  const tenant = await pgOr503(() => tenantForApiKey(pool, key));
  if (!tenant) {
    sendProblem(reply.header('WWW-Authenticate', 'Bearer error="invalid_token"'), unauthorized('unknown API key'));
    return undefined;
  }
  return tenant;
}

/** Admin endpoints: constant-time comparison of digests, so timing reveals nothing about the key. */
const OPERATOR = /^[\x21-\x7e][\x20-\x7e]{0,99}$/;

/**
 * Who is acting, for every audit row: the `X-Operator` header (the CLIs send the login name),
 * else "admin"; the admin key itself names no one. A malformed header is a 400, never guessed.
 */
export function operatorOf(req: FastifyRequest): string {
  const h = req.headers['x-operator'];
  if (h === undefined) return 'admin';
  if (typeof h !== 'string' || !OPERATOR.test(h)) {
    throw new ValidationError('invalid X-Operator header', [{ path: 'X-Operator', message: 'optional; your name for the audit trail, 1-100 printable ASCII characters' }]);
  }
  return h.trim();
}

/** A short, stable ID of the bearer key (a hash prefix) for audit rows: never the key. */
export function keyIdOf(req: FastifyRequest): string {
  return createHash('sha256').update(bearer(req) ?? '').digest('hex').slice(0, 12);
}

export function requireAdmin(adminKey: string | undefined, req: FastifyRequest, reply: FastifyReply): boolean {
  const key = bearer(req);
  const digest = (s: string) => createHash('sha256').update(s).digest();
  if (adminKey && key && timingSafeEqual(digest(key), digest(adminKey))) return true;
  sendProblem(reply.header('WWW-Authenticate', 'Bearer'), unauthorized(adminKey ? 'send Authorization: Bearer <admin api key>' : 'admin API disabled: ADMIN_API_KEY is not set'));
  return false;
}
