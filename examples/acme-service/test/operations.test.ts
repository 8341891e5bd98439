// The service's types end to end: on their queues, deduplicated by intent, a dead letter
// replayed by the service's own worker, and the job visible in the console's API and timeline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ValidationError } from 'durable-jobs/client';
import { createServer } from 'durable-jobs/server';
import { startTestStack, type DurableWorker, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { billOrder } from '../src/orders.js';
import { waitFor } from './wait.js';

const ADMIN_KEY = 'acme-test-admin-key-0123456789abcdef';
let stack: TestStack;
let worker: DurableWorker;
let api: FastifyInstance;
const admin = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
  const res = await api.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};

beforeAll(async () => {
  // The payments upstream's key, read once when a worker starts (never logged or stored).
  process.env.ACME_PAYMENTS_KEY = 'test-payments-key-0123456789';
  stack = await startTestStack({ jobs });
  process.env.ACME_PAYMENTS_URL = stack.upstream.url;
  worker = await stack.startWorker();
  api = createServer({ jobs, pool: stack.pool, temporal: stack.temporal, taskQueue: stack.taskQueue, adminApiKey: ADMIN_KEY });
  await api.ready();
});
afterAll(async () => {
  await api?.close();
  await stack?.close();
});

describe('acme-service job types', () => {
  it('polls the shared queue (system workflows, welcome) and its billing queue', () => {
    expect(worker.taskQueues).toEqual([stack.taskQueue, 'acme-billing']);
    // Every type of the registry, in its order (invoice, welcome, then the third-party ones).
    expect(worker.jobTypes).toEqual(jobs.names);
    expect(jobs.names.slice(0, 2)).toEqual(['invoice', 'welcome']);
  });

  it('bills an order once per intent: two effects, each applied once', async () => {
    const order = { id: 'ops-1', amountCents: 1200, email: 'bo@acme.test' };
    const first = await billOrder(stack.client, stack.tenantId, order);
    const done = await stack.waitForJob(first.jobId, 'succeeded');
    expect(done.result).toMatchObject({ orderId: 'ops-1', emailId: expect.any(String) });
    const again = await billOrder(stack.client, stack.tenantId, order);
    expect(again).toMatchObject({ jobId: first.jobId, replayed: true });
    expect(Object.keys(await stack.expectEffectsAppliedOnce(first.jobId)).sort()).toEqual([
      `${first.jobId}:charge`,
      `${first.jobId}:email`,
    ]);
    const run = await stack.temporal.workflow.getHandle(first.jobId).describe();
    expect(run.taskQueue).toBe('acme-billing');
  });

  it('runs welcome on the shared queue and refuses a type it does not define', async () => {
    const r = await stack.client.submitJob({
      tenantId: stack.tenantId,
      type: 'welcome',
      idempotencyKey: 'user-77-welcome',
      input: { userId: 'u-77', email: 'cy@acme.test' },
    });
    await stack.waitForJob(r.jobId, 'succeeded');
    expect((await stack.temporal.workflow.getHandle(r.jobId).describe()).taskQueue).toBe(stack.taskQueue);
    const err = await stack.client
      .submitJob({ tenantId: stack.tenantId, type: 'summarize', idempotencyKey: 'not-ours-1', input: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields).toEqual([{ path: 'type', message: `must be one of: ${jobs.names.join(', ')}` }]);
  });

  it('dead-letters a refused e-mail, and its replay by this worker reuses the charge', async () => {
    await stack.upstream.fault({ path: '/v1/emails', status: 400 });
    const { jobId } = await billOrder(stack.client, stack.tenantId, { id: 'ops-2', amountCents: 990, email: 'di@acme.test' });
    const failed = await stack.waitForJob(jobId, 'dead_lettered');
    const dl = failed.deadLetterId!;
    const dry = await admin('POST', '/v1/dead-letters/replay', { ids: [dl], dryRun: true });
    expect(dry.status).toBe(200);
    expect(JSON.stringify(dry.body)).toMatch(/charge[^}]*reuse/);
    const replay = await admin('POST', '/v1/dead-letters/replay', { ids: [dl] });
    expect(replay.status).toBe(202);
    const replayed = await waitFor('the replay job to succeed', async () => {
      const d = await admin('GET', `/v1/dead-letters/${dl}`);
      const r = (d.body.replays as Array<{ jobId: string; status: string }>)[0];
      return r?.status === 'succeeded' ? r : undefined;
    });
    // The replay job uses the original's effect keys: the charge was reused, the e-mail made once.
    const effects = Object.entries(await stack.upstream.effects()).filter(([k]) => k.startsWith(jobId));
    const applied = (p: string) => effects.filter(([, e]) => e.path === p).reduce((n, [, e]) => n + e.applied, 0);
    expect(replayed.jobId).not.toBe(jobId);
    expect(applied('/v1/payments')).toBe(1); // charged once, across the job and its replay
    expect(applied('/v1/emails')).toBe(1); // refused once, then sent once by the replay

    // The operator's view: the job in the console's job API and its timeline, the console page itself.
    const job = await admin('GET', `/v1/admin/jobs/${jobId}`);
    expect(job.body).toMatchObject({ jobId, type: 'invoice', status: 'dead_lettered' });
    const timeline = await admin('GET', `/v1/admin/jobs/${jobId}/timeline`);
    expect(timeline.status).toBe(200);
    expect(JSON.stringify(timeline.body)).toContain('charge');
    expect((await api.inject({ method: 'GET', url: '/console' })).statusCode).toBe(200);
  });

  it('a charge the payments service refuses is a dead letter naming the upstream and its code', async () => {
    await stack.upstream.fault({ path: '/v1/payments', status: 402 });
    const { jobId } = await billOrder(stack.client, stack.tenantId, { id: 'ops-3', amountCents: 500, email: 'ed@acme.test' });
    const failed = await stack.waitForJob(jobId, 'dead_lettered');
    const dl = await admin('GET', `/v1/dead-letters/${failed.deadLetterId}`);
    expect(dl.body).toMatchObject({ upstream: 'payments', providerCode: 'injected_fault', statusCode: 402 });
    // Nothing was charged and no e-mail went out.
    const effects = Object.entries(await stack.upstream.effects()).filter(([k]) => k.startsWith(jobId));
    expect(effects.every(([, e]) => e.applied === 0)).toBe(true);
  });
});
