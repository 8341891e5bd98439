import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// A rolling deploy: the old worker gets SIGTERM while it holds upstream calls, a new worker is
// already polling. Enough upstream slots for every held call (the default caps are 8/32).
const N = 50;
const LIMITS = JSON.stringify({ summarize: { perTenant: N, global: N } });

// Held calls stay held for minutes (spawning the replacement worker alone takes seconds on a
// loaded machine): neither the upstream timeout nor a heartbeat starved by the load may end
// them first. An abandoned attempt still moves on after its lease (60 s).
const BUDGETS = {
  summarize: {
    upstreamTimeoutMs: 600_000,
    heartbeatTimeoutMs: 60_000,
    startToCloseTimeoutMs: 900_000,
    scheduleToCloseTimeoutMs: 1_800_000,
  },
};

let h: Harness;
let jobs: JobsClient;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('graceful-shutdown', { workers: 0 });
  jobs = createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, budgets: BUDGETS });
});
// A failed test must not leave its workers polling the queue of the next one.
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => p.kill()));
});
afterAll(async () => {
  await h?.close();
});

async function spawn(env: Record<string, string>): Promise<WorkerProcess> {
  const p = await spawnWorker(h, { CONCURRENCY_LIMITS: LIMITS, ...env });
  procs.push(p);
  return p;
}

/** Submits `n` jobs whose upstream call is held (effect applied, answer held until released) and waits until all are held. */
async function heldJobs(n: number): Promise<string[]> {
  await h.simFault({ path: '/v1/summaries', times: n, status: 200, delayMs: 600_000 });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await jobs.submitJob({
      tenantId: 'tenant-a',
      type: 'summarize',
      idempotencyKey: `deploy-${uid()}`,
      input: { text: `Held call ${i}. Then a deploy.` },
    });
    ids.push(r.jobId);
  }
  await waitFor(
    `${n} upstream calls held`,
    async () => {
      const byKey = (await h.simEffects()).byKey;
      return ids.every((id) => byKey[`${id}:summarize`]?.requests === 1);
    },
    180_000,
  );
  return ids;
}

async function releaseHolds(): Promise<number> {
  const r = await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST', body: JSON.stringify({ path: '/v1/summaries' }) });
  return ((await r.json()) as { released: number }).released;
}

describe('SIGTERM of a worker with calls in flight (a rolling deploy)', () => {
  it('stops polling, lets the in-flight attempts finish within the grace time, then exits by itself: no second attempt', async () => {
    const old = await spawn({ WORKER_SHUTDOWN_GRACE_SECONDS: '300' });
    const ids = await heldJobs(N);
    const replacement = await spawn({});

    old.child.kill('SIGTERM');
    await waitFor('the old worker to say it drains', async () => old.output().includes('draining the worker'), 30_000);
    // Still inside the grace time (5 minutes): the upstream answers every held call now.
    expect(await releaseHolds()).toBe(N);

    const done = await Promise.all(ids.map((id) => h.waitForStatus(id, 'succeeded', 'a', 240_000)));
    expect(done.map((j) => j.attempts)).toEqual(ids.map(() => 1));
    const byKey = (await h.simEffects()).byKey;
    for (const id of ids) {
      expect(byKey[`${id}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
      const attempts = await attemptsForJob(h.pool, id);
      expect(attempts.map((a) => [a.attempt, a.step, a.outcome])).toEqual([[1, 'summarize', 'succeeded']]);
    }
    // The old worker exited by itself, cleanly, once its attempts were done: nobody killed it.
    expect(await old.exited).toEqual({ code: 0, signal: null });
    expect(old.output()).toContain('worker stopped');

    // An idle worker stops at once on SIGTERM (and the next test needs the queue to itself).
    replacement.child.kill('SIGTERM');
    expect(await replacement.exited).toEqual({ code: 0, signal: null });
  }, 600_000);

  it('an attempt still running at the grace deadline is cancelled, records why, and the next worker takes over at once', async () => {
    const old = await spawn({ WORKER_SHUTDOWN_GRACE_SECONDS: '1' });
    const ids = await heldJobs(3);
    const replacement = await spawn({});

    old.child.kill('SIGTERM');
    // The held answers never come within the grace second: the worker cancels those attempts and exits.
    expect(await old.exited).toEqual({ code: 0, signal: null });
    await releaseHolds();

    for (const id of ids) {
      const done = await h.waitForStatus(id, 'succeeded', 'a', 240_000);
      expect(done.attempts).toBe(2);
      // The cancelled attempt said what happened to it (not a silent lease expiry found later),
      // and the next one reconciled by the effect key: applied once.
      const attempts = await attemptsForJob(h.pool, id);
      expect(attempts.map((a) => [a.attempt, a.step, a.outcome, a.errorClass])).toEqual([
        [1, 'summarize', 'retryable', 'worker_shutdown'],
        [2, 'summarize', 'reconciled', null],
      ]);
      expect((await h.simEffects()).byKey[`${id}:summarize`]).toMatchObject({ applied: 1, requests: 2 });
    }
    replacement.child.kill('SIGTERM');
    expect(await replacement.exited).toEqual({ code: 0, signal: null });
  }, 600_000);
});
