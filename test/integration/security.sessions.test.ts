// The console's sessions (issue 39 §4, F10): the key is traded once for an HttpOnly,
// SameSite=Strict cookie that idles out, expires, ends on sign-out, and opens nothing cross-site.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminKeys } from '../../lib/config-admin-keys.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { buildApp } from '../../server/app.js';
import type { SessionOptions } from '../../server/sessions.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';

// Test-only keys, not real credentials.
const OPERATOR_KEY = 'sessions-test-operator-key-1-padded-32';
const VIEWER_KEY = 'sessions-test-viewer-key-001-padded-32';
const KEYS = `olga:operator=${OPERATOR_KEY},vic:viewer=${VIEWER_KEY}`;

let h: Harness;
const apps: FastifyInstance[] = [];

async function api(sessions: SessionOptions, keys = KEYS) {
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: parseAdminKeys(keys, undefined),
    version: 'test',
    webhookSecrets: {},
    sessions,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  apps.push(app);
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const call = async (
    method: string,
    path: string,
    o: { key?: string; cookie?: string; headers?: Record<string, string>; body?: unknown } = {},
  ) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.cookie) headers.cookie = o.cookie;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const signIn = async (key = OPERATOR_KEY) => {
    const res = await call('POST', '/v1/admin/session', { key, body: {} });
    expect(res.status).toBe(201);
    const setCookie = res.headers.get('set-cookie') ?? '';
    return { res, setCookie, cookie: setCookie.split(';')[0]! };
  };
  return { base, call, signIn };
}

const CONSOLE = { 'x-durable-jobs-console': '1' };

beforeAll(async () => {
  h = await startHarness('sessions', { workers: 0 });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await h?.close();
});

describe('console sessions', () => {
  it('trades the key for an HttpOnly, SameSite=Strict cookie; the key and the token are stored nowhere', async () => {
    const a = await api({ idleSeconds: 600, absoluteSeconds: 3600 });
    const { res, setCookie, cookie } = await a.signIn();
    expect(setCookie).toMatch(/^dj_session=[A-Za-z0-9_-]{43}; /);
    const attributes = setCookie.split(';').map((s) => s.trim());
    expect(attributes).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=3600']));
    // Plain HTTP here: a Secure cookie would never come back (security.tls.test.ts checks Secure over TLS).
    expect(attributes).not.toContain('Secure');
    expect(res.body).toMatchObject({ operator: 'olga', role: 'operator', tenants: null, idleTimeoutSeconds: 600 });
    expect(res.headers.get('cache-control')).toBe('no-store');

    const me = await a.call('GET', '/v1/admin/whoami', { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ operator: 'olga', role: 'operator', via: 'session' });

    const token = cookie.split('=')[1]!;
    const dump = JSON.stringify((await h.pool.query('SELECT * FROM operator_sessions')).rows);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(OPERATOR_KEY);
  });

  it('a session cannot open another session (its absolute timeout would never come)', async () => {
    const a = await api({ idleSeconds: 600, absoluteSeconds: 3600 });
    const { cookie } = await a.signIn();
    const again = await a.call('POST', '/v1/admin/session', { cookie, headers: CONSOLE, body: {} });
    expect(again.status).toBe(401);
    expect(again.body.type).toBe('urn:durable-jobs:problem:unauthorized');
  });

  it('sign-out ends the session on the server: the same cookie opens nothing afterwards', async () => {
    const a = await api({ idleSeconds: 600, absoluteSeconds: 3600 });
    const { cookie } = await a.signIn();
    const out = await a.call('DELETE', '/v1/admin/session', { cookie, headers: CONSOLE });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^dj_session=; .*Max-Age=0/);
    const after = await a.call('GET', '/v1/admin/whoami', { cookie });
    expect(after.status).toBe(401);
    expect(after.body.detail).toMatch(/session ended/);
    const row = (await h.pool.query("SELECT ended_at FROM operator_sessions WHERE operator = 'olga' AND ended_at IS NOT NULL")).rows;
    expect(row.length).toBeGreaterThan(0);
  });

  it('expires at its absolute timeout even while in use', async () => {
    const a = await api({ idleSeconds: 2, absoluteSeconds: 2 });
    const { cookie } = await a.signIn();
    expect((await a.call('GET', '/v1/admin/whoami', { cookie })).status).toBe(200);
    // Used every 300 ms (so never idle): it still ends, at the absolute limit.
    await waitFor(
      'the session to pass its absolute timeout',
      async () => (await a.call('GET', '/v1/admin/whoami', { cookie })).status === 401,
      30_000,
      300,
    );
    const expired = (await h.pool.query('SELECT expires_at <= now() AS past FROM operator_sessions ORDER BY created_at DESC LIMIT 1'))
      .rows[0];
    expect(expired.past).toBe(true);
  });

  it('idles out when unused, by the database clock', async () => {
    const a = await api({ idleSeconds: 1, absoluteSeconds: 3600 });
    const { cookie } = await a.signIn();
    const token = cookie.split('=')[1]!;
    const hash = (await import('node:crypto')).createHash('sha256').update(token).digest('hex');
    // Wait for the condition (unused for over a second), without touching the session.
    await waitFor(
      'the session to sit idle past its timeout',
      async () =>
        (
          await h.pool.query("SELECT last_seen_at < now() - interval '1 second' AS idle FROM operator_sessions WHERE token_hash = $1", [
            hash,
          ])
        ).rows[0]?.idle === true,
      30_000,
      200,
    );
    const res = await a.call('GET', '/v1/admin/whoami', { cookie });
    expect(res.status).toBe(401);
  });

  it('refuses a cross-site change: another Origin, a cross-site fetch, or no console header', async () => {
    const a = await api({ idleSeconds: 600, absoluteSeconds: 3600 });
    const { cookie } = await a.signIn();
    const attempt = (headers: Record<string, string>) =>
      a.call('POST', '/v1/dead-letters/replay', { cookie, headers, body: { ids: ['dl-x'], dryRun: true } });
    for (const headers of <Array<Record<string, string>>>[
      { ...CONSOLE, origin: 'https://evil.example' },
      { ...CONSOLE, 'sec-fetch-site': 'cross-site' },
      { origin: a.base },
      {},
    ]) {
      const res = await attempt(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body.type).toBe('urn:durable-jobs:problem:cross-site-request');
    }
    // The console's own request passes the check (and reaches the handler: no such dead letter).
    const own = await attempt({ ...CONSOLE, origin: a.base });
    expect(own.status).toBe(404);
    // Reads are not changes: a GET needs no header.
    expect((await a.call('GET', '/v1/dead-letters', { cookie })).status).toBe(200);
    // A bearer key is no ambient credential: no header needed.
    expect((await a.call('POST', '/v1/dead-letters/replay', { key: OPERATOR_KEY, body: { ids: ['dl-x'], dryRun: true } })).status).toBe(
      404,
    );
  });

  it("a session has its key's role, and ends when that key is removed from the configuration (rotation)", async () => {
    const a = await api({ idleSeconds: 600, absoluteSeconds: 3600 });
    const { cookie } = await a.signIn(VIEWER_KEY);
    const refused = await a.call('PUT', '/v1/admin/degradation', { cookie, headers: CONSOLE, body: { pausedPriorities: [] } });
    expect(refused.status).toBe(403);
    expect(refused.body.requiredRole).toBe('admin');
    // The same database, an API whose configuration no longer lists vic's key.
    const rotated = await api({ idleSeconds: 600, absoluteSeconds: 3600 }, `olga:operator=${OPERATOR_KEY}`);
    expect((await rotated.call('GET', '/v1/admin/whoami', { cookie })).status).toBe(401);
    expect((await a.call('GET', '/v1/admin/whoami', { cookie })).status).toBe(200);
  });
});
