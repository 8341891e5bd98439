// `charge-order` with Stripe's official SDK against stripe-mock, Stripe's own API mock: the
// PaymentIntent and request IDs recorded, a refused charge dead-lettered with Stripe's code
// (replayable: its charge would execute again), and a charge made while Stripe is unreachable
// retried until it succeeds.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createServer } from 'durable-jobs/server';
import { startTestStack, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { startStripeMock, type ThirdPartyServer } from './third-party.js';

const ADMIN_KEY = 'acme-test-admin-key-0123456789abcdef';
let stack: TestStack;
let stripeMock: ThirdPartyServer;
let api: FastifyInstance;
const admin = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
  const res = await api.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};
const order = (id: string, extra: Record<string, unknown> = {}) => ({
  tenantId: stack.tenantId,
  type: 'charge-order',
  idempotencyKey: `order-${id}-charge`,
  input: { orderId: id, amountCents: 4200, currency: 'eur', paymentMethod: 'pm_card_visa', ...extra },
});

beforeAll(async () => {
  stripeMock = await startStripeMock();
  process.env.STRIPE_API_BASE = stripeMock.url;
  stack = await startTestStack({ jobs });
  await stack.startWorker();
  api = createServer({ jobs, pool: stack.pool, temporal: stack.temporal, taskQueue: stack.taskQueue, adminApiKey: ADMIN_KEY });
  await api.ready();
});
afterAll(async () => {
  await api?.close();
  await stack?.close();
  await stripeMock?.close();
});

it('charges an order once and records the PaymentIntent and the request ID', async () => {
  const { jobId } = await stack.client.submitJob(order('c-1'));
  const done = await stack.waitForJob(jobId, 'succeeded');
  const pi = (done.result as { paymentIntent: string }).paymentIntent;
  expect(pi).toMatch(/^pi_/);
  const timeline = JSON.stringify((await admin('GET', `/v1/admin/jobs/${jobId}/timeline`)).body);
  expect(timeline).toContain(`provider ID ${pi}`);
  expect(timeline).toContain('request req_'); // Stripe's Request-Id header, through lastResponse.requestId
});

it('dead-letters a charge Stripe refuses, naming the upstream and its code; the replay would execute the charge', async () => {
  // stripe-mock cannot decline a card (its README: test cards answer success), so the refusal is
  // the closest real Stripe error it returns: a 400 invalid_request_error for a capture method
  // Stripe does not have. A StripeCardError (card_declined) takes the same path: stripe.test.ts.
  const { jobId } = await stack.client.submitJob(order('c-2', { captureMethod: 'later' }));
  const failed = await stack.waitForJob(jobId, 'dead_lettered');
  expect(failed.attempts).toBe(1); // never retried
  const dl = await admin('GET', `/v1/dead-letters/${failed.deadLetterId}`);
  expect(dl.body).toMatchObject({ upstream: 'stripe', providerCode: 'invalid_request_error', statusCode: 400 });
  const dry = await admin('POST', '/v1/dead-letters/replay', { ids: [failed.deadLetterId], dryRun: true });
  expect(dry.status).toBe(200);
  expect(JSON.stringify(dry.body)).toMatch(/"step":"charge","effectKey":"[^"]+","action":"execute"/);
});

it('retries a charge while Stripe is unreachable, and charges once it is back', async () => {
  await stripeMock.stop('SIGKILL');
  const { jobId } = await stack.client.submitJob(order('c-3'));
  // Connection refused: a retryable failure (the charge in doubt, re-sent with the same key).
  await stack.waitForJob(jobId, (s) => s.attempts >= 2, 120_000);
  await stripeMock.start(); // the same ports
  const done = await stack.waitForJob(jobId, 'succeeded', 120_000);
  expect((done.result as { paymentIntent: string }).paymentIntent).toMatch(/^pi_/);
});
