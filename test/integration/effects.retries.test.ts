import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, uid, type Harness } from '../support/harness.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('retries');
});
afterAll(async () => {
  await h?.close();
});

const effectKey = (jobId: string, step: string) => `${jobId}:${step}`;

describe('classified retries, owned by one layer', () => {
  it('429 with Retry-After: 2 twice, then success: attempts = 3, gaps honour the header, effect applied once', async () => {
    await h.simFault({ path: '/v1/summaries', times: 2, status: 429, retryAfter: '2' });
    const r = await h.submit('summarize', { text: 'Rate limited twice. Then fine.' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.attempts).toBe(3);
    const entry = (await h.simEffects()).byKey[effectKey(r.body.jobId, 'summarize')];
    expect(entry).toMatchObject({ applied: 1, requests: 3 });
    const times = entry.requestTimes.map((t: string) => Date.parse(t));
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(1_900);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(1_900);
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.errorClass, a.statusCode, a.delayMs])).toEqual([
      [1, 'retryable', 'rate_limited', 429, 2000],
      [2, 'retryable', 'rate_limited', 429, 2000],
      [3, 'succeeded', null, 200, null],
    ]);
  });

  it('400: no retry at all, exactly one upstream request, and the job ends dead-lettered', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 400 });
    const r = await h.submit('summarize', { text: 'Rejected by the upstream.' });
    const done = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    expect(done.attempts).toBe(1);
    expect(done.error).toMatchObject({ errorClass: 'invalid_request', statusCode: 400 });
    expect((await h.simEffects()).byKey[effectKey(r.body.jobId, 'summarize')]).toMatchObject({ applied: 0, requests: 1 });
  });

  it('a 503 storm longer than the elapsed cap stops retrying at the cap, says why, and dead-letters', async () => {
    // A short elapsed budget for this job type (what JOB_BUDGETS configures in production).
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      budgets: { summarize: { scheduleToCloseTimeoutMs: 6_000, backoffBaseMs: 400, backoffCapMs: 4_000, maximumAttempts: 50 } },
    });
    await h.simFault({ path: '/v1/summaries', times: 1000, status: 503 });
    try {
      const started = Date.now();
      const r = await jobs.submitJob({
        tenantId: 'tenant-a',
        type: 'summarize',
        idempotencyKey: `storm-${uid()}`,
        input: { text: 'Storm.' },
      });
      const done = await h.waitForStatus(r.jobId, 'dead_lettered');
      // It stopped by its own decision before the elapsed cap, not by a timeout after it.
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(done.attempts).toBeGreaterThan(1);
      expect(done.attempts).toBeLessThan(50);
      expect(done.error.errorClass).toBe('upstream_unavailable');
      expect(done.error.message).toMatch(/elapsed budget|attempt cap|elapsed cap/);
      const attempts = await attemptsForJob(h.pool, r.jobId);
      expect(attempts.at(-1)).toMatchObject({ outcome: 'non_retryable', errorClass: 'upstream_unavailable' });
      for (const a of attempts.slice(0, -1)) expect(a.delayMs).toBeLessThanOrEqual(4_000);
      expect((await h.simEffects()).byKey[effectKey(r.jobId, 'summarize')].applied).toBe(0);
    } finally {
      await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' });
    }
  });
});

describe('two effects in sequence', () => {
  it('purchase: charge then receipt, each with its own effect key, each applied once', async () => {
    // The receipt fails once with a 5xx: the retry must not charge again.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 502 });
    const r = await h.submit('purchase', { amountCents: 1999, currency: 'EUR', customer: 'cus_42', receiptEmail: 'buyer@example.com' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.result.chargeId).toMatch(/^ch_/);
    expect(done.result.receiptId).toMatch(/^rcpt_/);
    const effects = (await h.simEffects()).byKey;
    expect(effects[effectKey(r.body.jobId, 'charge')]).toMatchObject({ applied: 1, requests: 1 });
    expect(effects[effectKey(r.body.jobId, 'receipt')]).toMatchObject({ applied: 1, requests: 2 });
    const rows = await h.pool.query('SELECT step, state, provider_id, provider_request_id FROM effects WHERE job_id = $1 ORDER BY step', [
      r.body.jobId,
    ]);
    expect(rows.rows).toEqual([
      { step: 'charge', state: 'succeeded', provider_id: done.result.chargeId, provider_request_id: expect.stringMatching(/^req_/) },
      { step: 'receipt', state: 'succeeded', provider_id: done.result.receiptId, provider_request_id: expect.stringMatching(/^req_/) },
    ]);
  });
});

describe('result and outbox', () => {
  it('a failing notification retries on its own budget and never turns the finished job back', async () => {
    await h.simFault({ path: '/v1/notifications', times: 2, status: 503, retryAfter: '1' });
    const r = await h.submit('summarize', { text: 'Notify me.', notifyEmail: 'me@example.com' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(['pending', 'sent']).toContain(done.notification);
    // While the notification retries, and after, the job stays succeeded.
    await expect
      .poll(
        async () => {
          const s = (await h.api(`/v1/jobs/${r.body.jobId}`)).body;
          expect(s.status).toBe('succeeded');
          return s.notification;
        },
        { timeout: 60_000, interval: 200 },
      )
      .toBe('sent');
    const outbox = await h.pool.query('SELECT state, attempts FROM outbox WHERE job_id = $1', [r.body.jobId]);
    expect(outbox.rows).toEqual([{ state: 'delivered', attempts: 1 }]);
    expect((await h.simEffects()).byKey[effectKey(r.body.jobId, 'notify-email')]).toMatchObject({ applied: 1, requests: 3 });
  });
});
