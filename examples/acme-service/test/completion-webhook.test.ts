// The completion webhook against the service's own receiver (src/receiver.ts, the official
// Standard Webhooks library): the receiver is down for 10 s, the job stays succeeded all along,
// and once the receiver is back the event arrives exactly once.
import { createServer as createNetServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'durable-jobs/server';
import { startTestStack, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { startReceiver, type Receiver } from '../src/receiver.js';
import { waitFor } from './wait.js';

const ADMIN_KEY = 'acme-test-admin-key-0123456789abcdef';
let stack: TestStack;
let api: FastifyInstance;
let receiver: Receiver | undefined;

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createNetServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  // The receiver is on loopback: a production worker refuses internal addresses unless allowed.
  process.env.COMPLETION_WEBHOOK_ALLOW_PRIVATE = 'true';
  process.env.ACME_PAYMENTS_KEY ??= 'test-payments-key-0123456789';
  stack = await startTestStack({ jobs });
  await stack.startWorker();
  api = createServer({ jobs, pool: stack.pool, temporal: stack.temporal, taskQueue: stack.taskQueue, adminApiKey: ADMIN_KEY });
  await api.ready();
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
  await stack?.close();
});

describe('the completion webhook', () => {
  it('waits out a receiver that is down for 10 s, the job succeeded all along, then arrives once', async () => {
    const port = await freePort();
    const set = await api.inject({
      method: 'PUT',
      url: `/v1/admin/tenants/${stack.tenantId}/completion-webhook`,
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      payload: { url: `http://127.0.0.1:${port}/durable-jobs/events` },
    });
    expect(set.statusCode).toBe(200);
    const secret = set.json().secret as string;

    const { jobId } = await stack.client.submitJob({
      tenantId: stack.tenantId,
      type: 'order-shipped',
      idempotencyKey: 'order-881-shipped',
      input: { orderId: 'order-881', carrier: 'dhl' },
    });
    await stack.waitForJob(jobId, 'succeeded');
    // Nothing listens for 10 s: deliveries are refused and retried; the job never leaves succeeded.
    const downUntil = Date.now() + 10_000;
    while (Date.now() < downUntil) {
      const s = await stack.client.getJob(stack.tenantId, jobId);
      expect(s.status).toBe('succeeded');
      expect(s.notification).toBe('pending');
      await new Promise((r) => setTimeout(r, 500));
    }
    receiver = await startReceiver({ port, secret });
    const event = await waitFor('the event', async () => receiver!.events[0]);
    expect(event).toMatchObject({
      type: 'job.succeeded',
      data: {
        jobId,
        type: 'order-shipped',
        tenantId: stack.tenantId,
        status: 'succeeded',
        result: { orderId: 'order-881', carrier: 'dhl' },
      },
    });
    await stack.waitForJob(jobId, (s) => s.notification === 'sent');
    // Exactly once: one verified delivery, and no later retry.
    expect(receiver.deliveries).toHaveLength(1);
    expect(receiver.events).toHaveLength(1);
    expect((await stack.client.getJob(stack.tenantId, jobId)).status).toBe('succeeded');
  });
});
