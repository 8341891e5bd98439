// The worker dies between the two effects of an invoice: the job finishes on another worker,
// and the customer is charged once and e-mailed once.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { billOrder } from '../src/orders.js';
import { waitFor } from './wait.js';

let stack: TestStack;
beforeAll(async () => {
  process.env.ACME_PAYMENTS_KEY = 'test-payments-key-0123456789';
  stack = await startTestStack({ jobs });
  process.env.ACME_PAYMENTS_URL = stack.upstream.url; // the worker process inherits it
});
afterAll(async () => {
  await stack?.close();
});

it('survives a SIGKILL of its worker between charge and email, each effect applied once', async () => {
  // The e-mail's answer is held: the upstream applies it, the worker waits for the answer and dies.
  await stack.upstream.fault({ path: '/v1/emails', status: 200, delayMs: 120_000, hold: 'answer' });
  const doomed = await stack.spawnWorker('src/jobs.ts');
  const { jobId } = await billOrder(stack.client, stack.tenantId, { id: 'crash-1', amountCents: 4200, email: 'ann@acme.test' });
  const between = await waitFor('the charge done and the e-mail in flight', async () => {
    const e = await stack.upstream.effects();
    return e[`${jobId}:email`]?.requests ? e : undefined;
  });
  expect(between[`${jobId}:charge`]).toMatchObject({ applied: 1, requests: 1 });
  await doomed.kill('SIGKILL');
  await stack.upstream.releaseHolds();

  // Another worker (this process's) takes the job over once the dead one's lease expires.
  await stack.startWorker();
  const done = await stack.waitForJob(jobId, 'succeeded', 120_000);
  expect(done.attempts).toBeGreaterThanOrEqual(2);
  const effects = await stack.expectEffectsAppliedOnce(jobId);
  expect(Object.keys(effects).sort()).toEqual([`${jobId}:charge`, `${jobId}:email`]);
  expect(effects[`${jobId}:charge`]!.requests).toBe(1); // the charge was never sent again
});
