import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { startSimulator, type Simulator } from '../../simulator/server.js';
import { ADMIN_KEY, operatorKey, startHarness, type OperatorName, uid, type Harness } from '../support/harness.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let h: Harness;
let fallback: Simulator;
beforeAll(async () => {
  fallback = await startSimulator({ port: 0 });
  h = await startHarness('fallback', { fallbackProviderUrl: fallback.url });
});
afterAll(async () => {
  await h?.close();
  await fallback?.close();
});

const put = (body: unknown, operator: OperatorName = 'alice') =>
  h.api('/v1/admin/degradation', { method: 'PUT', tenant: null, headers: { authorization: `Bearer ${operatorKey(operator)}` }, body });
const admin = (path: string) => h.api(path, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
const ledger = async (sim: Simulator, jobId: string) =>
  ((await (await fetch(`${sim.url}/__sim/effects`)).json()) as any).byKey[`${jobId}:summarize`];
const effectUpstream = async (jobId: string) =>
  (await h.pool.query<{ upstream: string }>(`SELECT upstream FROM effects WHERE effect_key = $1`, [`${jobId}:summarize`])).rows[0]
    ?.upstream;
const metrics = () => fetch(`${h.opsUrl}/metrics`).then((r) => r.text());

describe('a fallback upstream is an explicit, recorded decision', () => {
  it('only types that declare a fallback can be switched; a refused change changes nothing', async () => {
    for (const [body, path] of [
      [{ pausedPriorities: [], fallbackJobTypes: ['purchase'] }, 'fallbackJobTypes.0'],
      [{ pausedPriorities: [], fallbackJobTypes: ['nope'] }, 'fallbackJobTypes.0'],
      [{ pausedPriorities: [], fallbackJobTypes: ['summarize', 'summarize'] }, 'fallbackJobTypes'],
      [{ pausedPriorities: [], fallbackJobTypes: 'summarize' }, 'fallbackJobTypes'],
    ] as const) {
      const r = await put(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expect((await put({ pausedPriorities: [], fallbackJobTypes: ['purchase'] })).body.errors[0].message).toMatch(
      /declares a fallback upstream: summarize/,
    );
    const g = await admin('/v1/admin/degradation');
    expect(g.body).toMatchObject({ fallbackJobTypes: [], fallbackSince: {}, audit: [] });
    expect(await metrics()).toContain('durable_jobs_fallback_enabled{job_type="summarize"} 0');
  });

  it('not enabled: a primary outage never switches quietly; the job retries and dead-letters on the primary', async () => {
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      budgets: { summarize: { scheduleToCloseTimeoutMs: 5_000, backoffBaseMs: 300, backoffCapMs: 2_000, maximumAttempts: 50 } },
    });
    await h.simFault({ path: '/v1/summaries', times: 1000, status: 503 });
    try {
      const r = await jobs.submitJob({
        tenantId: 'tenant-a',
        type: 'summarize',
        idempotencyKey: `outage-${uid()}`,
        input: { text: 'Primary down.' },
      });
      const done = await h.waitForStatus(r.jobId, 'dead_lettered');
      expect(done.attempts).toBeGreaterThan(1);
      expect(done.upstream).toBe('primary');
      expect(done.upstreamReason).toBeUndefined();
      expect(await effectUpstream(r.jobId)).toBe('primary');
      expect((await ledger(h.sim, r.jobId)).requests).toBe(done.attempts);
      expect(await ledger(fallback, r.jobId)).toBeUndefined();
    } finally {
      await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' });
    }
  });

  it('enabled while an effect is in doubt at the primary: it is reconciled there, never re-sent to the fallback', async () => {
    // 503 leaves the effect in doubt (the primary may have applied it); Retry-After spaces the attempts.
    await h.simFault({ path: '/v1/summaries', times: 2, status: 503, retryAfter: '4' });
    const r = await h.submit('summarize', { text: 'In doubt at the primary.' });
    await h.waitForStatus(r.body.jobId, 'retrying');
    const p = await put({ pausedPriorities: [], fallbackJobTypes: ['summarize'], reason: 'primary brown-out' });
    expect(p.status).toBe(200);
    expect(p.body.fallbackJobTypes).toEqual(['summarize']);
    expect(p.body.fallbackSince.summarize).toEqual({ at: expect.stringMatching(/Z$/), by: 'alice' });

    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.upstream).toBe('primary');
    expect(done.upstreamReason).toMatch(/may have reached the primary: reconciling with the primary/);
    expect(await effectUpstream(r.body.jobId)).toBe('primary');
    expect(await ledger(h.sim, r.body.jobId)).toMatchObject({ applied: 1, requests: 3 });
    expect(await ledger(fallback, r.body.jobId)).toBeUndefined();
  });

  it('enabled by an audited PUT: new jobs go to the fallback, their status says so and why, the metric counts them', async () => {
    const g = await admin('/v1/admin/degradation');
    const since = g.body.fallbackSince.summarize.at;
    expect(g.body.audit[0]).toMatchObject({
      actor: 'alice',
      reason: 'primary brown-out',
      before: { fallbackJobTypes: [] },
      after: { fallbackJobTypes: ['summarize'] },
    });

    const r = await h.submit('summarize', { text: 'Goes to the fallback.' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.upstream).toBe('fallback');
    expect(done.upstreamReason).toBe(
      `sent to the fallback upstream: the fallback upstream is enabled for summarize by an operator since ${since}`,
    );
    expect(JSON.stringify(done)).not.toContain('alice');
    expect(typeof done.result.summary).toBe('string');
    expect(await effectUpstream(r.body.jobId)).toBe('fallback');
    expect(await ledger(fallback, r.body.jobId)).toMatchObject({ applied: 1, requests: 1 });
    expect(await ledger(h.sim, r.body.jobId)).toBeUndefined();

    // A type without a fallback is untouched: its effects go to the primary, unlabelled.
    const p = await h.submit('purchase', { amountCents: 100, currency: 'EUR', customer: 'cus_1', receiptEmail: 'b@example.com' });
    const pd = await h.waitForStatus(p.body.jobId, 'succeeded');
    expect(pd.upstream).toBeUndefined();
    const charges = await h.pool.query(`SELECT upstream FROM effects WHERE job_id = $1`, [p.body.jobId]);
    expect(charges.rows.map((x) => x.upstream)).toEqual(['primary', 'primary']);

    const m = await metrics();
    expect(m).toContain('durable_jobs_fallback_enabled{job_type="summarize"} 1');
    expect(m).toContain('durable_jobs_fallback_used{job_type="summarize",window="all"} 1');
    expect(m).toContain('durable_jobs_fallback_used{job_type="summarize",window="15m"} 1');
    const hq = await admin('/v1/admin/queue-health');
    expect(hq.body.fallbackUsed.summarize).toMatchObject({ total: 1, perWindow: { '15m': 1 } });
    expect(hq.body.degradation.fallbackJobTypes).toEqual(['summarize']);
  });

  it('switched back (audited): new jobs use the primary again; the earlier job keeps its record', async () => {
    const p = await put({ pausedPriorities: [], fallbackJobTypes: [] }, 'bob');
    expect(p.body).toMatchObject({ fallbackJobTypes: [], fallbackSince: {} });
    const r = await h.submit('summarize', { text: 'Back on the primary.' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.upstream).toBe('primary');
    expect(done.upstreamReason).toBeUndefined();
    expect(await ledger(fallback, r.body.jobId)).toBeUndefined();
    const g = await admin('/v1/admin/degradation');
    expect(g.body.audit[0]).toMatchObject({ actor: 'bob', before: { fallbackJobTypes: ['summarize'] }, after: { fallbackJobTypes: [] } });
    expect(await metrics()).toContain('durable_jobs_fallback_used{job_type="summarize",window="all"} 1');
  });
});
