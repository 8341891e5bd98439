/**
 * Least privilege for the admin API (issue 39 §2). Every admin route declares, in its route
 * options, the least role it needs and how it meets a key scoped to tenants:
 *
 *     app.get('/v1/admin/jobs', access('viewer', 'checked'), handler)
 *
 * - `viewer`: reads, with inputs, results and payloads redacted (`redactForViewer`);
 * - `operator`: replay, discard, cancel, rerun, bulk actions (pause / resume / stop), schedules
 *   (pause, unpause, trigger, backfill), failed notifications (retry, discard);
 * - `admin`: tenants, their keys and completion webhooks, degradation.
 *
 * Tenant reach: `all` spans every tenant (queue health, degradation, tenants): a scoped key is
 * refused; `checked` filters or checks by the caller's tenants in its handler (`scopedTenant`,
 * `requireTenantInScope`); `any` concerns no tenant (whoami, the session).
 *
 * The app's `onRequest` hook (server/auth.ts `authorizeAdminRoutes`) enforces the declaration
 * before a body is parsed; `routeTable` lists every route with its declaration, so a test
 * walks them all and a new admin route without one fails it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ROLES, type Role } from '../lib/config-admin-keys.js';
import { NotFoundError, PermissionError, ValidationError } from '../lib/errors.js';

export { ROLES, type Role };

export type TenantReach = 'all' | 'checked' | 'any';

export interface RouteAccess {
  role: Role;
  tenants: TenantReach;
  /** `key`: only a bearer key, never a session cookie (opening a session: a session cannot renew itself). */
  via?: 'key';
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
}

/** Route options declaring who may call a route. */
export const access = (role: Role, tenants: TenantReach = 'all', via?: 'key'): { config: { access: RouteAccess } } => ({
  config: { access: { role, tenants, ...(via ? { via } : {}) } },
});

/** Who is calling: resolved once per request from a bearer key or a session cookie. */
export interface Principal {
  operator: string;
  role: Role;
  /** undefined: every tenant. */
  tenants: readonly string[] | undefined;
  /** A short ID of the key (or of the key that opened the session): audit rows name it, never the key. */
  keyId: string;
  /** The configured key's digest (never the key): what a session remembers of it. */
  keyHash: string;
  via: 'key' | 'session';
}

export const roleAllows = (have: Role, need: Role): boolean => ROLES.indexOf(have) >= ROLES.indexOf(need);

/** What each role adds, in words, for 403 details and the docs. */
export const ROLE_RIGHTS: Record<Role, string> = {
  viewer: 'reads, without inputs, results or payloads',
  operator: 'replay, discard, cancel, rerun, bulk actions and schedule pauses, triggers and backfills',
  admin: 'tenants, their keys and completion webhooks, and degradation',
};

const principals = new WeakMap<FastifyRequest, Principal>();

export function setPrincipal(req: FastifyRequest, p: Principal): void {
  principals.set(req, p);
}

export function principalOf(req: FastifyRequest): Principal | undefined {
  return principals.get(req);
}

/** The tenants the caller may see (undefined: all). Only after the route's access check. */
export function tenantsOf(req: FastifyRequest): readonly string[] | undefined {
  const p = principals.get(req);
  if (!p) throw new Error('tenantsOf() on a request no access check resolved: declare access() on the route');
  return p.tenants;
}

/**
 * The tenant a list is filtered by: the one asked for (which must be the caller's), or, for a
 * key scoped to exactly one tenant, that one. A key scoped to several must name one: the lists
 * filter by one tenant at a time.
 */
export function scopedTenant(req: FastifyRequest, asked: string | undefined, field = 'tenantId'): string | undefined {
  const tenants = tenantsOf(req);
  if (tenants === undefined) return asked;
  if (asked !== undefined) {
    if (!tenants.includes(asked)) throw outOfScope(tenants);
    return asked;
  }
  if (tenants.length === 1) return tenants[0];
  throw new ValidationError('this key is scoped to several tenants: name one', [
    { path: field, message: `required for a key scoped to tenants: one of ${tenants.join(', ')}` },
  ]);
}

/**
 * A single resource of `tenantId` (a job, a dead letter, a notification): out of the caller's
 * tenants it does not exist for the caller (404, the answer for an unknown ID: no oracle).
 */
export function requireTenantInScope(req: FastifyRequest, tenantId: string | null | undefined, what: string): void {
  const tenants = tenantsOf(req);
  if (tenants === undefined) return;
  if (!tenantId || !tenants.includes(tenantId)) throw new NotFoundError(`${what} not found`);
}

export const outOfScope = (tenants: readonly string[]) =>
  new PermissionError(`this key sees only the jobs of tenant(s) ${tenants.join(', ')}`, { slug: 'forbidden', title: 'Forbidden' });

// ---- viewers see no inputs, results or payloads ----

/** Keys whose values carry customer data in admin reads (job results, stale results, inputs, notification payloads). */
export const REDACTED_KEYS: ReadonlySet<string> = new Set(['input', 'inputs', 'result', 'staleResult', 'payload', 'output', 'outputs']);
export const REDACTED = '[redacted: viewer]';

/**
 * A copy of an admin read with every value under a redacted key replaced, at any depth: new
 * fields of new routes are covered without each route remembering (the console shows the marker).
 */
export function redactForViewer(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactForViewer);
  if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    out[k] = REDACTED_KEYS.has(k) && v !== undefined && v !== null ? REDACTED : redactForViewer(v);
  return out;
}

// ---- the route table ----

export interface RouteRecord {
  method: string;
  url: string;
  access: RouteAccess | undefined;
}

const tables = new WeakMap<object, RouteRecord[]>();

/** Records every route registered on `app` (and its child scopes) from now on, with its access declaration. */
export function trackRoutes(app: FastifyInstance): void {
  const table: RouteRecord[] = [];
  tables.set(app, table);
  app.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const config = r.config as { access?: RouteAccess } | undefined;
    for (const method of methods) if (method !== 'HEAD') table.push({ method, url: r.url, access: config?.access });
  });
}

/** Every route `trackRoutes` saw, in registration order. */
export function routeTable(app: FastifyInstance): readonly RouteRecord[] {
  return tables.get(app) ?? [];
}

/** The admin surface: every route under /v1/admin or /v1/dead-letters (any mount prefix), or declaring access. */
export const isAdminRoute = (r: RouteRecord): boolean => r.access !== undefined || /\/v1\/(admin|dead-letters)(\/|$)/.test(r.url);

/**
 * A list query with its tenant filter set for the caller (`scopedTenant`): what a scoped key
 * asks for is checked, what it leaves out is filled in. Unscoped keys get the query unchanged.
 */
export function scopeQuery(req: FastifyRequest, query: unknown, field = 'tenantId'): unknown {
  if (tenantsOf(req) === undefined) return query;
  const q = { ...((query ?? {}) as Record<string, unknown>) };
  const asked = q[field];
  if (asked !== undefined && typeof asked !== 'string') throw outOfScope(tenantsOf(req)!);
  q[field] = scopedTenant(req, asked, field);
  return q;
}
