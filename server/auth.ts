import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { pgOr503 } from '../lib/db.js';
import { keyIdFor } from '../lib/ids.js';
import { ValidationError } from '../lib/errors.js';
import { tenantForApiKey } from '../store/tenant-keys.js';
import type { OperatorKey } from '../lib/config.js';
import { principalOf, roleAllows, ROLE_RIGHTS, setPrincipal, type Principal, type RouteAccess } from './roles.js';
import { csrfRefusal, sessionToken, type SessionVerifier } from './sessions.js';
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
 * The admin keys the API accepts, each naming its operator, its role and its tenants: SHA-256
 * digests only (the raw keys stay in configuration). `AdminKeys` is what routes receive: a
 * keyring, or (older callers) the single `ADMIN_API_KEY`, which is the key of operator "admin".
 */
export interface AdminKeyring {
  readonly keys: readonly OperatorKey[];
  /** Throttles and counts wrong keys (server/auth-throttle.ts); none: neither (older callers). */
  readonly guard?: AuthGuard;
  /** The console's sessions (server/sessions.ts); none: bearer keys only. */
  readonly sessions?: SessionVerifier;
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
 * The configured key a bearer key is. Every digest is compared in constant time and the loop
 * never stops early, so timing reveals neither the key nor which operator matched.
 */
export function operatorKeyFor(ring: AdminKeyring, key: string): OperatorKey | undefined {
  const digest = sha256(key);
  let found: OperatorKey | undefined;
  for (const k of ring.keys) {
    if (timingSafeEqual(digest, Buffer.from(k.keyHash, 'hex')) && found === undefined) found = k;
  }
  return found;
}

const principalFromKey = (k: OperatorKey, keyId: string, via: Principal['via']): Principal => ({
  operator: k.operator,
  role: k.role ?? 'admin',
  tenants: k.tenants,
  keyId,
  keyHash: k.keyHash,
  via,
});

const OPERATOR_HEADER = 'the operator is named by the admin key; X-Operator may be omitted and, if sent, must be that name';

/**
 * Who is acting, for every audit row: the operator the admin key (or the session it opened)
 * belongs to. The self-declared `X-Operator` header names no one any more: sent with the key's
 * own name it is accepted (older CLIs), any other value is a 400, never silently dropped.
 */
export function operatorOf(req: FastifyRequest): string {
  const operator = principalOf(req)?.operator;
  if (operator === undefined) throw new Error('operatorOf() before requireAdmin(): the route is not admin-only');
  const h = req.headers['x-operator'];
  if (h !== undefined && (typeof h !== 'string' || h.trim() !== operator)) {
    throw new ValidationError('X-Operator does not match the admin key', [{ path: 'X-Operator', message: OPERATOR_HEADER }]);
  }
  return operator;
}

/** A short, stable ID of the caller's key (a keyed hash prefix, `lib/ids.ts`) for audit rows: never the key, no offline test of it. */
export function keyIdOf(req: FastifyRequest): string {
  return principalOf(req)?.keyId ?? keyIdFor(bearer(req) ?? '');
}

function refuseUnauthenticated(ring: AdminKeyring, req: FastifyRequest, reply: FastifyReply, key: string | undefined, detail?: string) {
  if (ring.keys.length > 0 && detail === undefined) ring.guard?.failed(req, key ? 'not_admin_key' : 'missing_key', key);
  const why =
    detail ??
    (ring.keys.length === 0
      ? 'admin API disabled: no ADMIN_API_KEYS (or ADMIN_API_KEY) configured'
      : key
        ? 'not an admin key (a tenant key never opens an admin route)'
        : 'send Authorization: Bearer <admin api key>, or sign in to the console');
  sendProblem(reply.header('WWW-Authenticate', key ? 'Bearer error="invalid_token"' : 'Bearer'), unauthorized(why));
}

/**
 * The caller of an admin route, from its bearer key or else its session cookie (unless the route
 * takes keys only), or a 401 / 429 answered and undefined. A session is valid only while the
 * key that opened it is still configured: its role and tenants are that key's, read now.
 */
async function authenticate(
  ring: AdminKeyring,
  req: FastifyRequest,
  reply: FastifyReply,
  keysOnly: boolean,
): Promise<Principal | undefined> {
  const key = bearer(req);
  const token = keysOnly || key ? undefined : sessionToken(req);
  if (token !== undefined && ring.sessions) {
    const s = await pgOr503(() => ring.sessions!.verify(token));
    const k = s && ring.keys.find((x) => x.keyHash === s.keyHash);
    if (s && k) return principalFromKey(k, s.keyId, 'session');
    refuseUnauthenticated(
      ring,
      req,
      reply,
      undefined,
      'the session ended (signed out, idle or too old, or its key was removed): sign in again',
    );
    return undefined;
  }
  if (throttled(ring.guard, req, reply, key)) return undefined;
  const k = key ? operatorKeyFor(ring, key) : undefined;
  if (k) return principalFromKey(k, keyIdFor(key!), 'key');
  refuseUnauthenticated(
    ring,
    req,
    reply,
    key,
    keysOnly && !key && ring.keys.length > 0 ? 'send Authorization: Bearer <admin api key> to open a session' : undefined,
  );
  return undefined;
}

const forbidden = (detail: string, extra: Record<string, unknown>) => problem(403, 'forbidden', 'Forbidden', detail, extra);

/**
 * Role, tenant reach and (for a session) cross-site checks of a route that declares `access`,
 * or undefined when the caller may go on. A key scoped to tenants never opens a route that
 * spans every tenant.
 */
function refusal(p: Principal, a: RouteAccess, req: FastifyRequest) {
  if (!roleAllows(p.role, a.role))
    return forbidden(`this needs the role ${a.role} (${ROLE_RIGHTS[a.role]}); ${p.operator}'s key has the role ${p.role}`, {
      requiredRole: a.role,
      role: p.role,
    });
  if (a.tenants === 'all' && p.tenants !== undefined)
    return forbidden(
      `this spans every tenant; ${p.operator}'s key is scoped to ${p.tenants.join(', ')}: it needs a key for every tenant with the role ${a.role}`,
      { requiredRole: a.role, role: p.role, requiredScope: 'every tenant', tenants: p.tenants },
    );
  return p.via === 'session' ? csrfRefusal(req) : undefined;
}

/**
 * Authenticates and authorizes every route that declares `access` (server/roles.ts) before its
 * body is read, and names the request for `operatorOf`. Add it before the routes.
 */
export function authorizeAdminRoutes(app: FastifyInstance, admin: AdminKeys): void {
  const ring = ringOf(admin);
  app.addHook('onRequest', async (req, reply) => {
    const a = req.routeOptions.config?.access;
    if (!a) return;
    // A refusal here answers before the body is read: the connection closes with it, so a body
    // still arriving (a slow one) is never read as a next request, and the request timeout writes
    // no second answer after this one (server/limits.ts).
    reply.header('connection', 'close');
    const p = await authenticate(ring, req, reply, a.via === 'key');
    if (!p) return reply;
    const refused = refusal(p, a, req);
    if (refused) {
      req.log.info({ operator: p.operator, role: p.role, requiredRole: a.role, route: req.routeOptions.url }, 'admin request refused');
      return sendProblem(reply, refused);
    }
    reply.removeHeader('connection');
    setPrincipal(req, p);
  });
}

/**
 * Admin routes: true when the request may go on. A route that declares `access` was checked by
 * `authorizeAdminRoutes` already. One that declares none fails closed: only an admin key for
 * every tenant opens it (a bearer key, not a session), else 401 / 403.
 */
export function requireAdmin(admin: AdminKeys, req: FastifyRequest, reply: FastifyReply): boolean {
  if (principalOf(req)) return true;
  const ring = ringOf(admin);
  const key = bearer(req);
  if (throttled(ring.guard, req, reply, key)) return false;
  const k = key ? operatorKeyFor(ring, key) : undefined;
  if (!k) {
    refuseUnauthenticated(ring, req, reply, key);
    return false;
  }
  const p = principalFromKey(k, keyIdFor(key!), 'key');
  const refused = refusal(p, { role: 'admin', tenants: 'all' }, req);
  if (refused) {
    sendProblem(reply, refused);
    return false;
  }
  setPrincipal(req, p);
  return true;
}
