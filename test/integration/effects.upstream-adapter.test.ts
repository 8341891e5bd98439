import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { attemptsForJob } from '../../store/attempts.js';
import { upstreamChargeJobType } from '../fixtures/jobs/upstream-charge/activities.js';
import { ADMIN_KEY, operatorKey, startHarness, uid, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// A payments API no simulator serves: the test's own, called by the fixture type's own client
// through declared upstreams (test/fixtures/jobs/upstream-charge). The worker is a real process
// (`npm run worker`'s entry) running the fixture's registry, so its logs can be read whole.
const SECRET = `sk_test_${uid()}CREDMARKER`;
const REGISTRY = fileURLToPath(new URL('../fixtures/jobs/upstream-charge/registry.ts', import.meta.url));

interface Stored {
  charge: { id: string; amountCents: number };
  requestId: string;
}
const byKey = new Map<string, Stored>();
const posts = new Map<string, number>();
const seen = new Set<string>();
let nextId = 0;
let payments: Server;
let paymentsUrl = '';

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const requestId = `req_${++nextId}`;
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
  res.end(JSON.stringify(body));
  return requestId;
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  let text = '';
  for await (const chunk of req) text += chunk;
  if (req.headers.authorization !== `Bearer ${SECRET}`) return send(res, 401, { error: { code: 'invalid_api_key' } });
  const lookup = /^\/v1\/charges\/by-key\/(.+)$/.exec(req.url ?? '');
  if (req.method === 'GET' && lookup) {
    const found = byKey.get(decodeURIComponent(lookup[1]!));
    return found ? send(res, 200, found) : send(res, 404, { error: { code: 'resource_missing' } });
  }
  const key = String(req.headers['idempotency-key'] ?? '');
  if (req.method !== 'POST' || req.url !== '/v1/charges' || !key) return send(res, 400, { error: { code: 'bad_request' } });
  posts.set(key, (posts.get(key) ?? 0) + 1);
  const body = JSON.parse(text) as { amountCents: number; card: string };
  const stored = byKey.get(key);
  if (stored) return send(res, 200, stored.charge); // idempotent by key: the first answer again
  const first = !seen.has(key);
  seen.add(key);
  if (body.card === 'declined') return send(res, 402, { error: { code: 'card_declined', type: 'card_error' } });
  if (body.card === 'busy-once' && first) return send(res, 429, { error: { code: 'rate_limit' } }, { 'retry-after': '1' });
  const charge = { id: `ch_${uid()}`, amountCents: body.amountCents };
  const requestId = `req_${++nextId}`;
  byKey.set(key, { charge, requestId });
  // Applied, and the answer lost: the connection stays open, the client's call times out.
  if (body.card === 'lose-answer-once' && first) return;
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
  res.end(JSON.stringify(charge));
}

let h: Harness;
let worker: WorkerProcess;
const jobIds: string[] = [];
beforeAll(async () => {
  payments = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => payments.listen(0, '127.0.0.1', resolve));
  const addr = payments.address();
  paymentsUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // The API's registry (intake); the worker process loads the same from REGISTRY.
  const registry = createJobRegistry([...builtInJobTypes, upstreamChargeJobType(paymentsUrl)]);
  h = await startHarness('upstream-adapter', { workers: 0, jobTypes: registry });
  worker = await spawnWorker(h, {
    DURABLE_JOBS_JOBS: REGISTRY,
    UPSTREAM_FIXTURE_URL: paymentsUrl,
    UPSTREAM_FIXTURE_KEY: SECRET,
    LOG_LEVEL: 'trace',
  });
});
afterAll(async () => {
  if (process.env.DEBUG_WORKER) console.log(worker?.output().slice(-6000));
  await worker?.kill();
  await h?.close();
  payments?.closeAllConnections();
  await new Promise((r) => payments?.close(r));
});

const charge = async (input: { via: 'lookup' | 'none'; card: string }) => {
  const r = await h.submit('upstream-charge', { ...input, amountCents: 4200 });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  jobIds.push(r.body.jobId);
  return r.body.jobId as string;
};
const effectRow = async (key: string) =>
  (await h.pool.query('SELECT state, provider_id, provider_request_id, reconciliations, result FROM effects WHERE effect_key = $1', [key]))
    .rows[0];
const deadLetter = async (id: string) =>
  (await h.api(`/v1/dead-letters/${id}`, { tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } })).body;

describe('an effect through a declared upstream, with any client', () => {
  it('records the provider IDs the call returned, and sends the effect key as the idempotency key', async () => {
    const jobId = await charge({ via: 'lookup', card: 'ok' });
    const done = await h.waitForStatus(jobId, 'succeeded');
    const key = `${jobId}:charge`;
    expect(done.result).toMatchObject({ chargeId: byKey.get(key)!.charge.id, amountCents: 4200 });
    expect(posts.get(key)).toBe(1);
    expect(await effectRow(key)).toEqual({
      state: 'succeeded',
      provider_id: byKey.get(key)!.charge.id,
      provider_request_id: byKey.get(key)!.requestId,
      reconciliations: 0,
      result: byKey.get(key)!.charge,
    });
  });

  it("a declined card: the upstream's classify makes it non-retryable, and the dead letter names the upstream and its code", async () => {
    const jobId = await charge({ via: 'lookup', card: 'declined' });
    const failed = await h.waitForStatus(jobId, 'dead_lettered');
    expect(posts.get(`${jobId}:charge`)).toBe(1); // not retried
    const dl = await deadLetter(failed.deadLetterId);
    expect(dl).toMatchObject({ errorClass: 'payment_declined', statusCode: 402, upstream: 'payments', providerCode: 'card_declined' });
    expect(dl.providerRequestIds).toEqual([expect.objectContaining({ step: 'charge', outcome: 'failed' })]);
    const attempts = await attemptsForJob(h.pool, jobId);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.errorClass])).toEqual([[1, 'non_retryable', 'payment_declined']]);
    // The timeline says it in the upstream's words, on the attempt and on the dead letter.
    const timeline = await h.api(`/v1/admin/jobs/${jobId}/timeline`, {
      tenant: null,
      headers: { authorization: `Bearer ${operatorKey('dana')}` },
    });
    const details = (timeline.body.events as Array<{ detail?: string }>).map((e) => e.detail ?? '').join('\n');
    expect(details).toContain('payments said card_declined');
  });

  it("a 429 retries after the upstream's Retry-After, through the one retry layer", async () => {
    const jobId = await charge({ via: 'lookup', card: 'busy-once' });
    await h.waitForStatus(jobId, 'succeeded');
    expect(posts.get(`${jobId}:charge`)).toBe(2);
    const rows = (
      await h.pool.query(
        `SELECT attempt, outcome, error_class, status_code, delay_ms, delay_source, upstream, provider_code
           FROM job_attempts WHERE job_id = $1 ORDER BY id`,
        [jobId],
      )
    ).rows;
    expect(rows).toEqual([
      {
        attempt: 1,
        outcome: 'retryable',
        error_class: 'rate_limited',
        status_code: 429,
        delay_ms: 1000,
        delay_source: 'retry-after',
        upstream: 'payments',
        provider_code: 'rate_limit',
      },
      expect.objectContaining({ attempt: 2, outcome: 'succeeded', upstream: null }),
    ]);
  });

  it('a lost answer on a lookupByKey upstream: the next attempt asks by key, keeps the original request ID, and sends nothing again', async () => {
    const jobId = await charge({ via: 'lookup', card: 'lose-answer-once' });
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 60_000);
    const key = `${jobId}:charge`;
    const original = byKey.get(key)!;
    expect(done.result.chargeId).toBe(original.charge.id);
    expect(posts.get(key)).toBe(1); // one POST: the lookup found it
    expect(await effectRow(key)).toMatchObject({
      state: 'succeeded',
      provider_id: original.charge.id,
      provider_request_id: original.requestId,
      reconciliations: 1,
    });
    const attempts = await attemptsForJob(h.pool, jobId);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.errorClass])).toEqual([
      [1, 'retryable', 'timeout'],
      [2, 'reconciled', null],
    ]);
  });

  it("a lost answer on an upstream with semantics 'none': never re-sent blind, the job stops as effect_in_doubt", async () => {
    const jobId = await charge({ via: 'none', card: 'lose-answer-once' });
    const failed = await h.waitForStatus(jobId, 'dead_lettered', 'a', 60_000);
    expect(posts.get(`${jobId}:charge`)).toBe(1);
    const dl = await deadLetter(failed.deadLetterId);
    expect(dl).toMatchObject({ errorClass: 'effect_in_doubt', upstream: 'payments-blind' });
    expect((await effectRow(`${jobId}:charge`)).state).toBe('pending');
  });
});

describe('the upstream credential', () => {
  it('is in no log, dead letter, attempt, effect, Temporal history or /metrics', async () => {
    expect(jobIds.length).toBeGreaterThanOrEqual(5);
    await expect.poll(() => worker.output().includes(jobIds.at(-1)!), { timeout: 30_000 }).toBe(true);
    const found: string[] = [];
    const check = (where: string, text: string) => {
      if (text.includes(SECRET) || text.includes('CREDMARKER')) found.push(where);
    };
    check('worker logs', worker.output());
    for (const table of ['dead_letters', 'dead_letter_actions', 'job_attempts', 'effects', 'job_intents', 'job_timeline_events']) {
      const exists = (await h.pool.query('SELECT to_regclass($1) AS t', [table])).rows[0].t;
      if (exists) check(table, JSON.stringify((await h.pool.query(`SELECT * FROM ${table}`)).rows));
    }
    for (const jobId of jobIds)
      check(`history of ${jobId}`, JSON.stringify((await h.temporal.workflow.getHandle(jobId).fetchHistory()).events));
    const metrics = await h.api('/metrics', { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(metrics.status).toBe(200);
    check('/metrics', String(metrics.body));
    expect(found).toEqual([]);
    // It was used: every charge above went through the API's Bearer check.
    expect(worker.output()).toContain('upstream-charge');
  });

  it('missing, stops the worker at start with the variable named', async () => {
    const env = { DURABLE_JOBS_JOBS: REGISTRY, UPSTREAM_FIXTURE_URL: paymentsUrl, UPSTREAM_FIXTURE_KEY: '' };
    const err = await spawnWorker(h, env).then(
      async (w) => {
        await w.kill();
        return undefined;
      },
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/exited early \(2\)/);
    expect(err?.message).toContain('credential UPSTREAM_FIXTURE_KEY is not set');
  });
});
