import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('cancel');
});
afterAll(async () => {
  await h?.close();
});

describe('POST /v1/jobs/{id}/cancel', () => {
  it('cancels a retrying job: 202, status cancelled, and it is never claimed again', async () => {
    // Every call fails with 503 and asks for a long pause: the job sits in `retrying`.
    await h.simFault({ path: '/v1/charges', times: 100, status: 503, retryAfter: '30' });
    const r = await h.submit('purchase', { amountCents: 500, currency: 'EUR', customer: 'cus_1', receiptEmail: 'r@example.com' });
    expect(r.status).toBe(202);
    const retrying = await h.waitForStatus(r.body.jobId, 'retrying');
    expect(retrying.error).toMatchObject({ errorClass: 'upstream_unavailable', statusCode: 503 });
    expect(retrying.nextAttemptAt).toBeDefined();
    const c = await h.api(`/v1/jobs/${r.body.jobId}/cancel`, { method: 'POST' });
    expect(c.status).toBe(202);
    const done = await h.waitForStatus(r.body.jobId, 'cancelled');
    expect(done.statusReason).toContain('cancel');
    // The row says cancelled just before the workflow closes as cancelled: wait for the close.
    await expect(h.temporal.workflow.getHandle(r.body.jobId).result()).rejects.toThrow();
    const desc = await h.temporal.workflow.getHandle(r.body.jobId).describe();
    expect(desc.status.name).toBe('CANCELLED');
    const requests = async () => (await h.simEffects()).byKey[`${r.body.jobId}:charge`]?.requests ?? 0;
    const seen = await requests();
    // No attempt is left scheduled: the activity was cancelled with the workflow.
    const pending = await h.temporal.workflow.getHandle(r.body.jobId).describe();
    expect(pending.raw.pendingActivities ?? []).toHaveLength(0);
    expect(await requests()).toBe(seen);
    // Cancelling again is harmless; a finished job cannot be cancelled.
    expect((await h.api(`/v1/jobs/${r.body.jobId}/cancel`, { method: 'POST' })).status).toBe(202);
  });

  it('answers 409 for a job that already succeeded', async () => {
    await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' });
    const r = await h.submit('summarize', { text: 'Short one.' });
    await h.waitForStatus(r.body.jobId, 'succeeded');
    const c = await h.api(`/v1/jobs/${r.body.jobId}/cancel`, { method: 'POST' });
    expect(c.status).toBe(409);
    expect(c.body.type).toBe('urn:durable-jobs:problem:state-conflict');
    await waitFor('status stays succeeded', async () => (await h.api(`/v1/jobs/${r.body.jobId}`)).body.status === 'succeeded');
  });
});
