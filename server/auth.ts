import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { pgOr503 } from '../lib/db.js';
import { keyIdFor } from '../lib/ids.js';
import { ValidationError } from '../lib/errors.js';
import { tenantForApiKey } from '../store/tenant-keys.js';
import type { OperatorKey } from '../lib/config.js';
import type { AuthGuard } from './auth-throttle.js';
import { problem, sendProblem } from './problems.js';

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

const unauthorized = (detail: string) => problem(401, 'unauthorized', 'Unauthorized', detail);

/**
 * 429 before any key is looked at when the request's address or key prefix failed too often
 * (server/auth-throttle.ts); true when it answered.
 */
function throttled(guard: AuthGuard | undefined, req: FastifyRequest, reply: FastifyReply, key: string | undefined): boolean {
  const wait = guard?.throttledFor(req, key);
  if (wait === undefined) return false;
  guard!.failed(req, 'throttled', key);
  sendProblem(
    reply,
    problem(
      429,
      'too-many-failed-authentications',
      'Too many failed authentications',
      `too many wrong API keys from this address or with this key's prefix; nothing was checked: retry after ${wait} s`,
      { retryAfterSeconds: wait },
    ),
  );
  return true;
}

/** Resolves the tenant from its bearer key, or answers 401 (429 when throttled) and returns undefined. */
export async function requireTenant(
  pool: pg.Pool,
  req: FastifyRequest,
  reply: FastifyReply,
  guard?: AuthGuard,
): Promise<string | undefined> {
  const key = bearer(req);
  if (throttled(guard, req, reply, key)) return undefined;
  if (!key) {
    guard?.failed(req, 'missing_key', key);
    sendProblem(reply.header('WWW-Authenticate', 'Bearer'), unauthorized('send Authorization: Bearer <tenant api key>'));
    return undefined;
  }
  const tenant = await pgOr503(() => tenantForApiKey(pool, key));
  if (!tenant) {
    guard?.failed(req, 'unknown_tenant_key', key);
    sendProblem(reply.header('WWW-Authenticate', 'Bearer error="invalid_token"'), unauthorized('unknown API key'));
    return undefined;
  }
  return tenant;
}

/**
 * The admin keys the API accepts, each naming its operator: SHA-256 digests only (the raw keys
 * stay in configuration). `AdminKeys` is what routes receive: a keyring, or (older callers) the
 * single `ADMIN_API_KEY`, which is the key of operator "admin".
 */
export interface AdminKeyring {
  readonly keys: readonly OperatorKey[];
  /** Throttles and counts wrong keys (server/auth-throttle.ts); none: neither (older callers). */
  readonly guard?: AuthGuard;
}
export type AdminKeys = AdminKeyring | string | undefined;

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export function adminKeyring(opts: { adminKeys?: readonly OperatorKey[]; adminApiKey?: string }): AdminKeyring {
  const keys = [...(opts.adminKeys ?? [])];
  if (opts.adminApiKey !== undefined) {
    const keyHash = sha256(opts.adminApiKey).toString('hex');
    if (!keys.some((k) => k.keyHash === keyHash)) keys.push({ operator: 'admin', keyHash });
  }
  return { keys };
}

const ringOf = (a: AdminKeys): AdminKeyring => (typeof a === 'object' ? a : adminKeyring({ adminApiKey: a }));

/**
 * The operator a bearer key belongs to. Every digest is compared in constant time and the loop
 * never stops early, so timing reveals neither the key nor which operator matched.
 */
function operatorForKey(ring: AdminKeyring, key: string): string | undefined {
  const digest = sha256(key);
  let found: string | undefined;
  for (const k of ring.keys) {
    if (timingSafeEqual(digest, Buffer.from(k.keyHash, 'hex')) && found === undefined) found = k.operator;
  }
  return found;
}

/** The operator `requireAdmin` resolved for a request: the one name of every audit row it writes. */
const operators = new WeakMap<FastifyRequest, string>();

const OPERATOR_HEADER = 'the operator is named by the admin key; X-Operator may be omitted and, if sent, must be that name';

/**
 * Who is acting, for every audit row: the operator the admin key belongs to (resolved by
 * `requireAdmin`). The self-declared `X-Operator` header names no one any more: sent with the
 * key's own name it is accepted (older CLIs), any other value is a 400, never silently dropped.
 */
export function operatorOf(req: FastifyRequest): string {
  const operator = operators.get(req);
  if (operator === undefined) throw new Error('operatorOf() before requireAdmin(): the route is not admin-only');
  const h = req.headers['x-operator'];
  if (h !== undefined && (typeof h !== 'string' || h.trim() !== operator)) {
    throw new ValidationError('X-Operator does not match the admin key', [{ path: 'X-Operator', message: OPERATOR_HEADER }]);
  }
  return operator;
}

/** A short, stable ID of the bearer key (a keyed hash prefix, `lib/ids.ts`) for audit rows: never the key, no offline test of it. */
export function keyIdOf(req: FastifyRequest): string {
  return keyIdFor(bearer(req) ?? '');
}

/**
 * Admin routes: the bearer key must be one of the operators' keys (a tenant key never is), else
 * 401. On success the request is named: `operatorOf(req)` returns the key's operator.
 */
export function requireAdmin(admin: AdminKeys, req: FastifyRequest, reply: FastifyReply): boolean {
  const ring = ringOf(admin);
  const key = bearer(req);
  if (throttled(ring.guard, req, reply, key)) return false;
  const operator = key ? operatorForKey(ring, key) : undefined;
  if (operator !== undefined) {
    operators.set(req, operator);
    return true;
  }
  if (ring.keys.length > 0) ring.guard?.failed(req, key ? 'not_admin_key' : 'missing_key', key);
  const detail =
    ring.keys.length === 0
      ? 'admin API disabled: no ADMIN_API_KEYS (or ADMIN_API_KEY) configured'
      : key
        ? 'not an admin key (a tenant key never opens an admin route)'
        : 'send Authorization: Bearer <admin api key>';
  sendProblem(reply.header('WWW-Authenticate', key ? 'Bearer error="invalid_token"' : 'Bearer'), unauthorized(detail));
  return false;
}
