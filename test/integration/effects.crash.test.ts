import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { createProvider } from '../../activities/provider.js';
import type { StepArgs } from '../../contract/job-types.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import type { StepOutcome, SummarizeActivities } from '../../jobs/summarize/activities.js';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('crash', { workers: 0 });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await h?.close();
});

describe('a worker dies after the upstream applied the effect, before the result was recorded', () => {
  it('another worker takes over after the lease, reconciles by effect key, and the effect stays applied once', async () => {
    const first = await spawnWorker(h);
    procs.push(first);
    // The upstream applies the effect at once but holds its answer: the worker is now in
    // the window between "upstream did the work" and "we stored it".
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 60_000 });
    const r = await h.submit('summarize', { text: 'Applied, then the worker died.' });
    const key = `${r.body.jobId}:summarize`;
    await expect.poll(async () => (await h.simEffects()).byKey[key]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    await first.kill('SIGKILL');

    const second = await spawnWorker(h);
    procs.push(second);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded', 'a', 120_000);
    expect(done.attempts).toBe(2);
    expect(done.result.summary).toBe('Applied, then the worker died.');
    expect((await h.simEffects()).byKey[key]).toMatchObject({ applied: 1, requests: 2 });
    const effect = await h.pool.query('SELECT state, reconciliations, attempts FROM effects WHERE effect_key = $1', [key]);
    expect(effect.rows[0]).toEqual({ state: 'succeeded', reconciliations: 1, attempts: 2 });
    // The killed attempt recorded nothing itself; the next one recorded it from its lease.
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.map((a) => [a.attempt, a.step, a.outcome, a.errorClass])).toEqual([
      [1, 'summarize', 'lease_expired', 'lease_lost'],
      [2, 'summarize', 'reconciled', null],
    ]);
    expect(attempts[0]!.startedAt.getTime()).toBeLessThanOrEqual(attempts[0]!.finishedAt.getTime());
  });
});

describe('fencing', () => {
  it('a stale attempt finishing late cannot overwrite the newer result', async () => {
    const worker = await spawnWorker(h);
    procs.push(worker);
    // Attempt 1 fails (503), attempt 2 stores the result with fence 2.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '1' });
    const r = await h.submit('summarize', { text: 'Fenced. Only the newest attempt writes.' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.attempts).toBe(2);
    const before = await h.pool.query('SELECT result, result_fence, updated_at FROM job_intents WHERE job_id = $1', [r.body.jobId]);
    expect(before.rows[0].result_fence).toBe('2');

    // Now attempt 1 "wakes up" (a paused VM, a long GC) and runs to its end: the real
    // activity code against the real database, as attempt 1 of the same activity.
    const acts = createActivities({
      pool: h.pool,
      provider: createProvider(h.sim.url),
      log: h.log,
      codeVersion: 'test',
      jobs: defaultJobRegistry,
      limits: defaultJobRegistry.concurrencyLimits(),
    });
    const env = new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs: 10_000 });
    const staleArgs: StepArgs = { jobId: r.body.jobId, tenantId: 'tenant-a', jobType: 'summarize', priority: 'normal' };
    const stale: StepOutcome = await env.run(acts.summarizeText as SummarizeActivities['summarizeText'], staleArgs);
    expect(stale.resultStored).toBe(false);

    const after = await h.pool.query('SELECT result, result_fence, updated_at FROM job_intents WHERE job_id = $1', [r.body.jobId]);
    expect(after.rows[0]).toEqual(before.rows[0]);
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.at(-1)).toMatchObject({ attempt: 1, outcome: 'fenced', errorClass: 'stale_attempt' });
    // The stale attempt reused the stored effect instead of calling the upstream again.
    expect((await h.simEffects()).byKey[`${r.body.jobId}:summarize`]).toMatchObject({ applied: 1, requests: 2 });
  });
});
