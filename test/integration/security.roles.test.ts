// Least privilege (issue 39 §2): every admin route, walked from Fastify's own route table, for
// each role and for a key scoped to one tenant. A new admin route that declares no role fails
// the first test; a route that lets a role through that it should not fails the walk.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { buildApp } from '../../server/app.js';
import { isAdminRoute, REDACTED, roleAllows, routeTable, type RouteRecord } from '../../server/roles.js';
import { startHarness, TENANTS, type Harness } from '../support/harness.js';

// Test-only keys, not real credentials.
const KEYS = {
  viewer: 'roles-test-key-viewer-0001-padded-to-32',
  operator: 'roles-test-key-operator-01-padded-to-32',
  admin: 'roles-test-key-admin-00001-padded-to-32',
  scoped: 'roles-test-key-scoped-op-1-padded-to-32',
} as const;
type Caller = keyof typeof KEYS;
const ADMIN_KEYS = parseAdminKeys(
  `vera:viewer=${KEYS.viewer},otto:operator=${KEYS.operator},ada=${KEYS.admin},sam:operator@${TENANTS.a.id}=${KEYS.scoped}`,
  undefined,
);
const ROLE: Record<Caller, 'viewer' | 'operator' | 'admin'> = {
  viewer: 'viewer',
  operator: 'operator',
  admin: 'admin',
  scoped: 'operator',
};

// Path parameters for the walk: IDs that exist nowhere (the handler may answer 404, 400 or 409;
// what matters is that the access check answered first, and how).
const PARAMS: Record<string, string> = {
  jobId: 'job-does-not-exist',
  id: '999999999',
  replayId: 'replay-00000000-0000-4000-8000-000000000000',
  command: 'pause',
  source: 'sim',
  webhookId: 'msg_does_not_exist',
  name: 'no-such-key',
};
const pathOf = (url: string) => url.replace(/:([A-Za-z]+)/g, (_m, p: string) => encodeURIComponent(PARAMS[p] ?? 'x'));

let h: Harness;
let app: FastifyInstance;
let base: string;
let jobA: string;
let jobB: string;

async function call(caller: Caller | null, method: string, path: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (caller) headers.authorization = `Bearer ${KEYS[caller]}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, text };
}

beforeAll(async () => {
  h = await startHarness('roles');
  app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: ADMIN_KEYS,
    version: 'test',
    webhookSecrets: {},
    // The walk sends ~50 requests without a valid key on purpose: not a guessing attack to throttle.
    authThrottle: { maxFailures: 100_000 },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // One finished job per tenant, with a result (the summary of its text).
  const a = await h.submit('summarize', { text: 'Tenant a wrote this. It is private.' });
  const b = await h.submit('summarize', { text: 'Tenant b wrote this. It is private too.' }, { tenant: 'b' });
  jobA = a.body.jobId;
  jobB = b.body.jobId;
  await h.waitForStatus(jobA, 'succeeded');
  await h.waitForStatus(jobB, 'succeeded', 'b');
});
afterAll(async () => {
  await app?.close();
  await h?.close();
});

describe('roles on every admin route', () => {
  let routes: RouteRecord[];
  beforeAll(() => {
    routes = routeTable(app).filter(isAdminRoute) as RouteRecord[];
  });

  it('every admin route in the route table declares the least role it needs', () => {
    expect(routes.length).toBeGreaterThanOrEqual(24);
    expect(routes.filter((r) => r.access === undefined).map((r) => `${r.method} ${r.url}`)).toEqual([]);
    // The declarations the issue asks for, spot-checked: reads for viewers, actions for operators, settings for admins.
    const need = (m: string, u: string) => routes.find((r) => r.method === m && r.url === u)?.access?.role;
    expect(need('GET', '/v1/admin/jobs')).toBe('viewer');
    expect(need('POST', '/v1/dead-letters/replay')).toBe('operator');
    expect(need('POST', '/v1/dead-letters/:id/discard')).toBe('operator');
    expect(need('POST', '/v1/dead-letters/replays/:replayId/:command')).toBe('operator');
    expect(need('POST', '/v1/admin/outbox/:id/discard')).toBe('operator');
    expect(need('PUT', '/v1/admin/degradation')).toBe('admin');
    expect(need('POST', '/v1/admin/tenants/:id/keys')).toBe('admin');
  });

  for (const caller of Object.keys(KEYS) as Caller[]) {
    it(`${caller}: allowed where its role suffices, else 403 naming the role needed`, async () => {
      const seen: string[] = [];
      for (const r of routes) {
        const a = r.access!;
        const hasBody = ['POST', 'PUT', 'PATCH'].includes(r.method);
        const res = await call(caller, r.method, pathOf(r.url), hasBody ? {} : undefined);
        const what = `${caller} ${r.method} ${r.url} → ${res.status} ${res.text.slice(0, 200)}`;
        seen.push(what);
        const refused = !roleAllows(ROLE[caller], a.role) || (caller === 'scoped' && a.tenants === 'all');
        if (refused) {
          expect(res.status, what).toBe(403);
          expect(res.body.type, what).toBe('urn:durable-jobs:problem:forbidden');
          expect(res.body.requiredRole, what).toBe(a.role);
          expect(res.body.detail, what).toContain(`the role ${a.role}`);
        } else {
          expect([401, 403], what).not.toContain(res.status);
          expect(res.status, what).toBeLessThan(500);
        }
      }
      expect(seen.length).toBe(routes.length);
    });
  }

  it('no key, or a tenant key: 401 on every admin route, before any role is considered', async () => {
    for (const r of routes) {
      const none = await call(null, r.method, pathOf(r.url));
      expect(none.status, `${r.method} ${r.url}`).toBe(401);
      const res = await fetch(base + pathOf(r.url), { method: r.method, headers: { authorization: `Bearer ${TENANTS.a.key}` } });
      expect(res.status, `${r.method} ${r.url} with a tenant key`).toBe(401);
    }
  });
});

describe('what each role reads', () => {
  it('whoami names the role and tenants, for the console to hide what the role cannot do', async () => {
    expect((await call('viewer', 'GET', '/v1/admin/whoami')).body).toMatchObject({ operator: 'vera', role: 'viewer', tenants: null });
    expect((await call('scoped', 'GET', '/v1/admin/whoami')).body).toMatchObject({
      operator: 'sam',
      role: 'operator',
      tenants: [TENANTS.a.id],
    });
    expect((await call('admin', 'GET', '/v1/admin/whoami')).body).toMatchObject({ operator: 'ada', role: 'admin', tenants: null });
  });

  it('a viewer reads jobs without their results; an operator reads them whole', async () => {
    const asOperator = await call('operator', 'GET', `/v1/admin/jobs/${jobA}`);
    expect(asOperator.body.result).toBeTruthy();
    expect(asOperator.body.result).not.toBe(REDACTED);
    const summary = JSON.stringify(asOperator.body.result);

    const one = await call('viewer', 'GET', `/v1/admin/jobs/${jobA}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ jobId: jobA, tenantId: TENANTS.a.id, status: 'succeeded', result: REDACTED });
    const list = await call('viewer', 'GET', '/v1/admin/jobs');
    expect(list.body.jobs.map((j: any) => j.jobId)).toEqual(expect.arrayContaining([jobA, jobB]));
    for (const j of list.body.jobs) expect(j.result).toBe(REDACTED);
    expect(list.text).not.toContain(summary.slice(1, -1));
    expect(one.text).not.toContain(summary.slice(1, -1));
  });

  it("a key scoped to tenant a sees only a's jobs: b's are unknown to it, and lists are filtered", async () => {
    expect((await call('scoped', 'GET', `/v1/admin/jobs/${jobA}`)).status).toBe(200);
    const other = await call('scoped', 'GET', `/v1/admin/jobs/${jobB}`);
    expect(other.status).toBe(404);
    expect(other.body.type).toBe('urn:durable-jobs:problem:not-found');
    expect((await call('scoped', 'GET', `/v1/admin/jobs/${jobB}/timeline`)).status).toBe(404);
    expect((await call('scoped', 'GET', `/v1/admin/jobs/${jobA}/timeline`)).status).toBe(200);

    const mine = await call('scoped', 'GET', '/v1/admin/jobs');
    expect(mine.status).toBe(200);
    expect(mine.body.jobs.length).toBeGreaterThan(0);
    expect(new Set(mine.body.jobs.map((j: any) => j.tenantId))).toEqual(new Set([TENANTS.a.id]));
    const asked = await call('scoped', 'GET', `/v1/admin/jobs?tenantId=${TENANTS.b.id}`);
    expect(asked.status).toBe(403);
    expect(asked.body.type).toBe('urn:durable-jobs:problem:forbidden');
    const dl = await call('scoped', 'GET', `/v1/dead-letters?tenantId=${TENANTS.b.id}`);
    expect(dl.status).toBe(403);
    // A replay of another tenant's dead letters by filter is refused, not widened.
    const replay = await call('scoped', 'POST', '/v1/dead-letters/replay', { filter: { tenantId: TENANTS.b.id }, dryRun: true });
    expect(replay.status).toBe(403);
  });

  it('the 403 is a problem naming the role needed and changes nothing', async () => {
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM degradation_audit')).rows[0].n;
    const res = await call('operator', 'PUT', '/v1/admin/degradation', { pausedPriorities: ['low'], reason: 'an operator may not' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'urn:durable-jobs:problem:forbidden', status: 403, requiredRole: 'admin', role: 'operator' });
    expect((await h.pool.query('SELECT count(*)::int AS n FROM degradation_audit')).rows[0].n).toBe(before);
    expect((await call('admin', 'GET', '/v1/admin/degradation')).body.pausedPriorities).toEqual([]);
  });
});
