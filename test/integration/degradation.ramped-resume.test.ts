import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionTimes, maxInSlidingWindow } from '../support/queries.js';
import { operatorKey, startHarness, waitFor, type Harness } from '../support/harness.js';

// 200 deferred jobs, one in-process worker; a high rate keeps the test near two minutes.
const JOBS = 200;
const RATE = 150;
let h: Harness;
beforeAll(async () => {
  h = await startHarness('degradation-ramp');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('ramp-test')}` } });
const health = async () => (await admin('/v1/admin/queue-health?history=0')).body;

describe('resume after a pause', () => {
  it(`admits ${JOBS} deferred jobs at no more than ${RATE} per minute, not all at once`, async () => {
    expect(
      (await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: ['low'], recoveryRatePerMinute: RATE } })).status,
    ).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) => h.submit('summarize', { text: `deferred ${i + j}` }, { priority: 'low' })),
      );
      for (const r of batch) {
        expect(r.status).toBe(202);
        ids.push(r.body.jobId);
      }
    }
    await waitFor(`all ${JOBS} jobs deferred`, async () => (await health()).backlog.deferred === JOBS, 120_000, 1_000);
    expect((await h.simEffects()).totalApplied).toBe(0);

    const resumedAt = Date.now();
    expect((await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } })).status).toBe(200);
    // Part-way through, the report shows the ramp: some admitted, others still deferred.
    const mid = await waitFor(
      'the ramp to be under way',
      async () => {
        const x = await health();
        const done = x.jobTypes.summarize?.finished15m.succeeded ?? 0;
        return done > 0 && x.backlog.deferred > 0 ? x : undefined;
      },
      120_000,
      1_000,
    );
    expect(mid.backlog.deferred).toBeGreaterThan(0);

    await waitFor(
      `all ${JOBS} jobs to succeed`,
      async () => (await health()).jobTypes.summarize?.finished15m.succeeded === JOBS,
      300_000,
      2_000,
    );
    const ledger = await admissionTimes(h.pool, ids);
    expect(ledger).toHaveLength(JOBS);
    const times = ledger.map((a) => a.admitted_at.getTime());
    // The contract: no more than RATE admissions in any one-minute window...
    expect(maxInSlidingWindow(times, 60_000)).toBeLessThanOrEqual(RATE);
    // ...and evenly spaced slots, so the ramp spans about (JOBS - 1) / RATE minutes.
    const span = Math.max(...times) - Math.min(...times);
    expect(span).toBeGreaterThanOrEqual(((JOBS - 1) * 60_000) / RATE - 1_000);
    expect(Math.min(...times)).toBeGreaterThanOrEqual(resumedAt - 1_000);
    // The gate held: no job started executing before its admission.
    const early = await h.pool.query(
      `SELECT count(*)::int AS n FROM job_intents j JOIN admissions a USING (job_id) WHERE j.first_started_at < a.admitted_at AND j.job_id = ANY($1)`,
      [ids],
    );
    expect(early.rows[0].n).toBe(0);
    const last = await h.api(`/v1/jobs/${ids.at(-1)}`);
    expect(last.body.deferredMs).toBeGreaterThan(0);
    expect((await h.simEffects()).totalApplied).toBe(JOBS);
  }, 420_000);
});
