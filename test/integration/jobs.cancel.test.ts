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
    // Every call fails with 503 and asks to come back in 2 s: the job keeps retrying.
    await h.simFault({ path: '/v1/charges', times: 100, status: 503, retryAfter: '2' });
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
    // What a claim would leave: an upstream request, an attempt row, a lease row.
    const evidence = async () => ({
      requests: (await h.simEffects()).byKey[`${r.body.jobId}:charge`]?.requests ?? 0,
      attempts: (await h.pool.query('SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1', [r.body.jobId])).rows[0].n,
      leases: (await h.pool.query('SELECT count(*)::int AS n FROM activity_leases WHERE job_id = $1', [r.body.jobId])).rows[0].n,
    });
    const seen = await evidence();
    // No attempt is left scheduled: the activity was cancelled with the workflow.
    const pending = await h.temporal.workflow.getHandle(r.body.jobId).describe();
    expect(pending.raw.pendingActivities ?? []).toHaveLength(0);
    // A probe job fails once with the same Retry-After (2 s) and then succeeds: its retry timer,
    // set after the cancel, fired and the worker claimed it. A retry of the cancelled job, set
    // before the cancel, would have fired by then and been claimed by the same polling worker.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '2' });
    const probe = await h.submit('summarize', { text: 'The worker is polling.' });
    expect((await h.waitForStatus(probe.body.jobId, 'succeeded')).attempts).toBe(2);
    expect(await evidence()).toEqual(seen);
    expect(seen.requests).toBeGreaterThan(0);
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
