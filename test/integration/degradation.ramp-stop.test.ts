import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, waitFor, type Harness } from '../support/harness.js';

// 40 deferred jobs resumed at 120/min: the ramp runs for about 20 s, long enough to degrade mid-way.
const JOBS = 40;
const RATE = 120;
let h: Harness;
beforeAll(async () => {
  h = await startHarness('degradation-ramp-stop');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('ramp-test')}` } });
const health = async () => (await admin('/v1/admin/queue-health?history=0')).body;

describe('the ramp after a pause has a stop condition', () => {
  it('refuses a bad stop condition as a problem naming the field, changing nothing', async () => {
    const before = (await admin('/v1/admin/degradation')).body;
    expect(before.rampStop).toEqual({ failureRatio: 0.5, windowSeconds: 60, minAttempts: 10 }); // the documented defaults
    for (const [rampStop, path] of [
      [{ failureRatio: 2 }, 'rampStop.failureRatio'],
      [{ windowSeconds: 1 }, 'rampStop.windowSeconds'],
      [{ minAttempts: 0 }, 'rampStop.minAttempts'],
      [{ ratio: 0.5 }, 'rampStop.ratio'],
    ] as const) {
      const r = await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [], rampStop } });
      expect(r.status, JSON.stringify(rampStop)).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(r.body.errors.map((e: any) => e.path)).toContain(path);
    }
    const after = (await admin('/v1/admin/degradation')).body;
    expect(after.rampStop).toEqual(before.rampStop);
    expect(after.audit).toHaveLength(before.audit.length);
  });

  it('pauses the ramp again when the upstream degrades mid-ramp, and says so in the audit and the health report', async () => {
    const put = await admin('/v1/admin/degradation', {
      method: 'PUT',
      body: { pausedPriorities: ['low'], recoveryRatePerMinute: RATE, rampStop: { failureRatio: 0.5, windowSeconds: 30, minAttempts: 4 } },
    });
    expect(put.status).toBe(200);
    expect(put.body.rampStop ?? (await admin('/v1/admin/degradation')).body.rampStop).toEqual({
      failureRatio: 0.5,
      windowSeconds: 30,
      minAttempts: 4,
    });
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) ids.push((await h.submit('summarize', { text: `ramp stop ${i}` }, { priority: 'low' })).body.jobId);
    await waitFor(`all ${JOBS} jobs deferred`, async () => (await health()).backlog.deferred === JOBS, 120_000, 1_000);

    expect((await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } })).status).toBe(200);
    await waitFor('the ramp to be under way', async () => (await h.simEffects()).totalApplied >= 3, 120_000, 250);
    // The upstream degrades again: every summary answers 503 from now on.
    await h.simFault({ path: '/v1/summaries', times: 10_000, status: 503 });

    const d = await waitFor(
      'the stop condition to pause low again',
      async () => {
        const x = (await admin('/v1/admin/degradation')).body;
        return x.pausedPriorities.includes('low') && x.rampHalted ? x : undefined;
      },
      120_000,
      500,
    );
    expect(d.rampHalted).toMatchObject({
      priorities: ['low'],
      reason: expect.stringMatching(/^ramp stop condition: \d+ of \d+ upstream attempts/),
    });
    expect(d.rampHalted.failures).toBeGreaterThanOrEqual(d.rampHalted.attempts * 0.5);
    expect(d.rampHalted.attempts).toBeGreaterThanOrEqual(4);
    expect(d.audit[0]).toMatchObject({ actor: 'system', reason: d.rampHalted.reason, after: { pausedPriorities: ['low'] } });

    const report = await health();
    expect(report.degradation).toMatchObject({ pausedPriorities: ['low'], rampHalted: { reason: d.rampHalted.reason } });
    expect(report.backlog.deferred).toBeGreaterThan(0);
    // The gate held: nothing admitted after the halt, and the rest of the ramp waits, saying why.
    const late = await h.pool.query('SELECT count(*)::int AS n FROM admissions WHERE job_id = ANY($1) AND admitted_at > $2', [
      ids,
      d.rampHalted.at,
    ]);
    expect(late.rows[0].n).toBe(0);
    // Each job still holding a ramp slot re-checks at its slot and is deferred again, saying why.
    await waitFor(
      'every deferred job to name the stop condition',
      async () => {
        const r = await h.pool.query<{ status_reason: string }>(
          `SELECT status_reason FROM job_intents WHERE job_id = ANY($1) AND status = 'deferred'`,
          [ids],
        );
        return r.rows.length > 0 && r.rows.every((x) => /ramp stop condition|paused again/.test(x.status_reason));
      },
      120_000,
      500,
    );
    // Their ramp slots from before the halt are void (a re-check after a pause takes a new round):
    // none counts as a pending admission (before: each did for 10 minutes).
    expect((await health()).degradation.pendingAdmissions).toBe(0);

    // An operator's resume clears the halt.
    expect((await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } })).status).toBe(200);
    expect((await admin('/v1/admin/degradation')).body.rampHalted).toBeNull();
  }, 420_000);
});
