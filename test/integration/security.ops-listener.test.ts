// Operational endpoints (issue 39 §2, F7): on the public listener `/metrics` and `/openapi.json`
// need an admin key and `/readyz` says ready or not, without dependency errors or the commit;
// the admin listener (loopback by default) serves all three, with the reasons, without a key.
import { Client, type Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { startAdminListener, type AdminListener } from '../../server/admin-listener.js';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { DEFAULT_HTTP_LIMITS } from '../../lib/http-limits.js';
import { ADMIN_KEYS, operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
const closers: Array<() => Promise<void>> = [];
beforeAll(async () => {
  h = await startHarness('ops-listener', { workers: 0 });
});
afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await h?.close();
});

/** An API on the suite's Temporal, on a namespace that does not exist: never ready. */
async function notReadyApi(): Promise<{ url: string; ops: AdminListener }> {
  const temporal = new Client({ connection: h.temporal.connection as Connection, namespace: `missing-${uid()}` });
  const app: FastifyInstance = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal,
    jobs: createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal, taskQueue: h.taskQueue }),
    log: h.log,
    adminKeys: ADMIN_KEYS,
    version: '0.1.0+gdeadbeefcafe.src0123456789ab',
    webhookSecrets: {},
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const ops = (await startAdminListener(app, { host: '127.0.0.1', port: 0, required: true, enabled: true }, DEFAULT_HTTP_LIMITS, h.log))!;
  closers.push(async () => {
    await ops.close();
    await app.close();
  });
  return { url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, ops };
}

const get = async (url: string, key?: string) => {
  const r = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const text = await r.text();
  return { status: r.status, headers: r.headers, text };
};

describe('the public listener', () => {
  it('answers /metrics and /openapi.json only with an admin key (401 without one or with a tenant key)', async () => {
    for (const path of ['/metrics', '/openapi.json']) {
      expect((await get(`${h.baseUrl}${path}`)).status, path).toBe(401);
      expect((await get(`${h.baseUrl}${path}`, TENANTS.a.key)).status, path).toBe(401);
      const ok = await get(`${h.baseUrl}${path}`, operatorKey('alice'));
      expect(ok.status, path).toBe(200);
      expect(ok.text, path).toMatch(path === '/metrics' ? /^# HELP /m : /"openapi":"3\.0\.3"/);
    }
  });

  it('says ready without the checks, and not ready without dependency errors or the commit; an admin key shows them', async () => {
    const ready = await get(`${h.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready' });

    const { url } = await notReadyApi();
    const down = await get(`${url}/readyz`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(JSON.parse(down.text)).toMatchObject({ type: 'urn:durable-jobs:problem:not-ready', status: 503 });
    expect(down.text).not.toMatch(/temporal:|postgres:|namespace|missing-|deadbeef/i);

    const detailed = await get(`${url}/readyz`, operatorKey('bob'));
    expect(detailed.status).toBe(503);
    expect(JSON.parse(detailed.text).detail).toMatch(/^postgres: ok; temporal: .*namespace/i);
    // A key that is not an admin key learns nothing more (and counts as a failed authentication).
    expect((await get(`${url}/readyz`, TENANTS.a.key)).status).toBe(401);
  });
});

describe('the admin listener', () => {
  it('serves /metrics, /openapi.json and the detailed /readyz without a key, and nothing else', async () => {
    const m = await get(`${h.opsUrl}/metrics`);
    expect(m.status).toBe(200);
    expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(m.text).toContain('durable_jobs_auth_failures_total');
    const doc = await get(`${h.opsUrl}/openapi.json`);
    expect(JSON.parse(doc.text).info.version).toBe('test');
    expect(JSON.parse((await get(`${h.opsUrl}/readyz`)).text)).toEqual({ status: 'ready', postgres: 'ok', temporal: 'ok' });
    expect(new URL(h.opsUrl).hostname).toBe('127.0.0.1');

    const { ops } = await notReadyApi();
    const down = await get(`${ops.url}/readyz`);
    expect(down.status).toBe(503);
    expect(JSON.parse(down.text).detail).toMatch(/temporal: .*namespace/i);
    expect(JSON.parse((await get(`${ops.url}/openapi.json`)).text).info.version).toContain('deadbeef');

    // The API's routes are not here: a job, an admin route.
    expect((await get(`${h.opsUrl}/v1/jobs/job-x`, TENANTS.a.key)).status).toBe(404);
    expect((await get(`${h.opsUrl}/v1/admin/whoami`, operatorKey('alice'))).status).toBe(404);
  });
});
