// Slow bodies and connection room (issue 39 §1, F1): a client that sends its headers and then
// trickles the body is answered 408 with a problem and closed once the request timeout passes;
// past the connection cap a new connection is closed unanswered; and 200 slow clients leave a
// normal submit working (its latency is the benchmark's: `npm run bench -- --only abuse`).
import net from 'node:net';
import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../../lib/http-limits.js';
import { ADMIN_KEYS, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
const apps: FastifyInstance[] = [];
const sockets: net.Socket[] = [];
beforeAll(async () => {
  h = await startHarness('slow-bodies', { workers: 0 });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const app of apps) await app.close();
  await h?.close();
});

/** An API of its own with the given limits, on the harness's Postgres and Temporal. */
async function api(limits: Partial<HttpLimits> = {}) {
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminKeys: ADMIN_KEYS,
    version: 'test',
    webhookSecrets: {},
    httpLimits: { ...DEFAULT_HTTP_LIMITS, ...limits },
  });
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as net.AddressInfo).port;
  const connections = () => new Promise<number>((resolve, reject) => app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
  return { app, port, connections };
}

interface SlowClient {
  socket: net.Socket;
  /** Resolves when the connection closed (by the server: never, without a request timeout). */
  closed: Promise<void>;
  isClosed(): boolean;
  received(): string;
}

/** Complete headers announcing a 200 KB body, then one byte of it every `everyMs`, until the connection closes. */
async function slowBody(port: number, path: string, headers: Record<string, string> = {}, everyMs = 250): Promise<SlowClient> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined); // a write after the server closed: EPIPE
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString()));
  let done = false;
  const closed = once(socket, 'close').then(() => {
    done = true;
  });
  await once(socket, 'connect');
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n${extra}\r\n{`);
  const drip = setInterval(() => {
    if (!socket.destroyed) socket.write(' ');
  }, everyMs);
  void closed.then(() => clearInterval(drip));
  return { socket, closed, isClosed: () => done, received: () => data };
}

/** Status line and JSON body of a raw HTTP/1.1 answer. */
function parse(raw: string): { status: number; headers: string; body: any } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body: body ? JSON.parse(body) : undefined };
}

const submit = (port: number) =>
  fetch(`http://127.0.0.1:${port}/v1/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TENANTS.a.key}`, 'idempotency-key': `slow-${uid()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'summarize', input: { text: 'A normal submit beside slow clients.' } }),
  });

describe('a body trickled after complete headers', () => {
  it('is answered 408 request-timeout with a problem and closed once the request timeout passes, with or without a key', async () => {
    const { port } = await api({ requestTimeoutMs: 2_000, headersTimeoutMs: 1_000 });
    const intents = async () => (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n as number;
    const before = await intents();
    const t0 = Date.now();
    const clients = await Promise.all([
      slowBody(port, '/v1/jobs', { authorization: `Bearer ${TENANTS.a.key}`, 'idempotency-key': `slow-${uid()}` }),
      // No key on a tenant route: its key is checked in the handler, after the body is read.
      slowBody(port, '/v1/jobs', { 'idempotency-key': `slow-${uid()}` }),
    ]);
    // Bounded far above the 2 s timeout (a loaded machine), far below forever: without a request
    // timeout these connections stay open as long as the client trickles.
    await waitFor('the server to close both slow connections', async () => clients.every((c) => c.isClosed()), 60_000);
    for (const c of clients) {
      const r = parse(c.received());
      expect(r.status, `answer after ${Date.now() - t0} ms: ${c.received().slice(0, 200)}`).toBe(408);
      expect(r.headers).toContain('content-type: application/problem+json');
      expect(r.headers).toContain('connection: close');
      expect(r.body).toMatchObject({ type: 'urn:durable-jobs:problem:request-timeout', status: 408 });
    }
    // Nothing was recorded for the submit that never arrived.
    expect(await intents()).toBe(before);
  });

  it('on an admin route without a key: 401 before the body is read, and the connection closes with it (no second answer)', async () => {
    const { port } = await api({ requestTimeoutMs: 2_000, headersTimeoutMs: 1_000 });
    const c = await slowBody(port, '/v1/dead-letters/replay');
    await waitFor('the server to close the slow connection', async () => c.isClosed(), 60_000);
    const r = parse(c.received());
    expect(r.status, c.received().slice(0, 300)).toBe(401);
    expect(r.headers).toContain('connection: close');
    expect(r.body).toMatchObject({ status: 401 });
  });
});

describe('connections', () => {
  it('past the cap a new connection is closed unanswered; once slow clients are gone the API answers again', async () => {
    // A request timeout far beyond the test, so only the cap can close anything here.
    const { port, connections } = await api({ maxConnections: 20, requestTimeoutMs: 600_000 });
    const slow = await Promise.all(Array.from({ length: 20 }, () => slowBody(port, '/v1/jobs')));
    await waitFor('the 20 slow connections to be open at the server', async () => (await connections()) === 20);

    const extra = net.connect(port, '127.0.0.1');
    sockets.push(extra);
    let answer = '';
    extra.on('data', (d: Buffer) => (answer += d.toString()));
    extra.on('error', () => undefined); // reset by the server
    // Connection: close, so that an answer (the cap not holding) ends the connection too.
    extra.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await once(extra, 'close');
    expect(answer).toBe('');

    for (const c of slow) c.socket.destroy();
    await waitFor('the slow connections to be gone', async () => (await connections()) === 0);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it('a normal submit is accepted while 200 slow-body connections are open', async () => {
    // The default cap (4,096) and timeouts, but a request timeout that cannot close the slow
    // clients before a loaded machine has opened all 200 of them.
    const { port, connections } = await api({ requestTimeoutMs: 600_000 });
    const slow = await Promise.all(Array.from({ length: 200 }, () => slowBody(port, '/v1/jobs', {}, 1_000)));
    await waitFor('200 slow connections open at the server', async () => (await connections()) >= 200);
    const r = await submit(port);
    expect(r.status).toBe(202);
    expect(((await r.json()) as { jobId: string }).jobId).toMatch(/^job-/);
    expect(slow.filter((c) => c.isClosed())).toHaveLength(0); // they were all still open
    for (const c of slow) c.socket.destroy();
  });
});
