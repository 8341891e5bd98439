// Failed authentications (issue 39 §1, F4): throttled per address and per key prefix (429 with
// Retry-After), logged as a structured event without the key, counted in /metrics.
import { request } from 'node:http';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { parseSamples, sampleValue } from '../support/metrics-text.js';
import { ADMIN_KEYS, operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
const apps: FastifyInstance[] = [];
beforeAll(async () => {
  h = await startHarness('auth-throttle', { workers: 0 });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await h?.close();
});

const MAX = 5;
const WINDOW_MS = 4_000;

/** An API of its own (its own counts, its own log lines) with a small throttle: 5 wrong keys per 4 s. */
async function throttledApi() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: pino({ level: 'info' }, sink),
    adminKeys: ADMIN_KEYS,
    version: 'test',
    webhookSecrets: {},
    metricsCacheMs: 0,
    authThrottle: { maxFailures: MAX, windowMs: WINDOW_MS },
  });
  apps.push(app);
  // Every loopback address, so requests can come from 127.0.0.x of their choosing.
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return { port: typeof addr === 'object' && addr ? addr.port : 0, lines };
}

/** GET with a bearer key from a chosen loopback source address. */
function get(port: number, path: string, key: string | undefined, from = '127.0.0.1') {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, localAddress: from, headers: key ? { authorization: `Bearer ${key}` } : {} },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : text }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('failed authentications', () => {
  it('answer 429 with Retry-After from one address after a bounded number, before the key is checked, until the window ends', async () => {
    const api = await throttledApi();
    const guesses = Array.from({ length: MAX }, (_, i) => `guess-${uid()}-${i}`);
    for (const g of guesses) expect((await get(api.port, '/v1/admin/whoami', g)).status).toBe(401);
    const blocked = await get(api.port, '/v1/admin/whoami', `guess-${uid()}-last`);
    expect(blocked.status).toBe(429);
    expect(blocked.headers['content-type']).toContain('application/problem+json');
    expect(blocked.body).toMatchObject({ type: 'urn:durable-jobs:problem:too-many-failed-authentications', status: 429 });
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000);
    expect(blocked.body.retryAfterSeconds).toBe(retryAfter);
    // Even the real key (a guess that happens to be right) is not checked meanwhile, on tenant routes too.
    expect((await get(api.port, '/v1/admin/whoami', operatorKey('alice'))).status).toBe(429);
    expect((await get(api.port, '/v1/jobs/job-x', TENANTS.a.key)).status).toBe(429);
    // Another address is not held back by this one.
    expect((await get(api.port, '/v1/admin/whoami', operatorKey('alice'), '127.0.0.9')).status).toBe(200);
    // The window ends: the real key works again.
    await waitFor(
      'the throttle window to end',
      async () => (await get(api.port, '/v1/admin/whoami', operatorKey('alice'))).status === 200,
      15_000,
      250,
    );
  });

  it('answer 429 for a key prefix guessed from many addresses, and count tenant-key guesses too', async () => {
    const api = await throttledApi();
    const prefix = `pfx${uid().slice(0, 5)}`;
    for (let i = 0; i < MAX; i++)
      expect((await get(api.port, '/v1/jobs/job-x', `${prefix}-guess-${i}`, `127.0.1.${i + 1}`)).status).toBe(401);
    const r = await get(api.port, '/v1/jobs/job-x', `${prefix}-guess-last`, '127.0.1.50');
    expect(r.status).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another prefix from a fresh address is still checked (401, not 429).
    expect((await get(api.port, '/v1/jobs/job-x', `other-${uid()}`, '127.0.1.51')).status).toBe(401);
  });

  it('are counted in /metrics by reason and logged as events without the key', async () => {
    const api = await throttledApi();
    const tenantGuess = `${uid()}-tenant-guess`;
    const adminGuess = `admin-guess-${uid()}`;
    expect((await get(api.port, '/v1/jobs/job-x', tenantGuess, '127.0.2.1')).status).toBe(401);
    expect((await get(api.port, '/v1/admin/whoami', adminGuess, '127.0.2.2')).status).toBe(401);
    expect((await get(api.port, '/v1/admin/whoami', undefined, '127.0.2.3')).status).toBe(401);
    for (let i = 0; i < MAX; i++) await get(api.port, '/v1/admin/whoami', `x${uid()}`, '127.0.2.4');
    expect((await get(api.port, '/v1/admin/whoami', `x${uid()}`, '127.0.2.4')).status).toBe(429);

    const samples = parseSamples((await get(api.port, '/metrics', operatorKey('alice'), '127.0.2.5')).body as string);
    const count = (reason: string) => sampleValue(samples, 'durable_jobs_auth_failures_total', { reason });
    expect(count('unknown_tenant_key')).toBe(1);
    expect(count('not_admin_key')).toBe(1 + MAX);
    expect(count('missing_key')).toBe(1);
    expect(count('throttled')).toBe(1);

    const events = api.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === 'auth_failed');
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: 'unknown_tenant_key', route: '/v1/jobs/:jobId', method: 'GET', remoteAddr: '127.0.2.1' }),
        expect.objectContaining({ reason: 'not_admin_key', route: '/v1/admin/whoami', remoteAddr: '127.0.2.2' }),
        expect.objectContaining({ reason: 'missing_key', route: '/v1/admin/whoami' }),
      ]),
    );
    expect(api.lines.some((l) => JSON.parse(l).event === 'auth_throttled')).toBe(true);
    const all = api.lines.join('\n');
    expect(all).not.toContain(tenantGuess.slice(0, 8));
    expect(all).not.toContain(adminGuess);
  });
});
