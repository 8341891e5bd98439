import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { MIN_RETRY_DELAY_MS } from '../../lib/retry.js';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// Enough upstream slots that every job's call is in flight at once (the default caps are 8/32).
const N = 40;
const LIMITS = JSON.stringify({ summarize: { perTenant: N, global: N } });

// The first calls are held until all are in flight (tens of seconds on a loaded machine):
// neither the upstream timeout nor the lease may end them first.
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
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await startHarness('retry-spread', { workers: 0 });
  jobs = createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, budgets: BUDGETS });
  worker = await spawnWorker(h, { CONCURRENCY_LIMITS: LIMITS });
});
afterAll(async () => {
  await worker?.kill();
  await h?.close();
});

describe('a 503 storm: jobs that failed together retry apart', () => {
  it(`${N} jobs answered 503 at the same instant spread their retries over several seconds`, async () => {
    // Every first call is held and then answered 503 (no Retry-After: the delay is jitter)
    // at the same moment, when the holds are released: an upstream outage ending for all.
    await h.simFault({ path: '/v1/summaries', times: N, status: 503, delayMs: 600_000 });
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const r = await jobs.submitJob({
        tenantId: 'tenant-a',
        type: 'summarize',
        idempotencyKey: `storm-${uid()}`,
        input: { text: `Storm ${i}.` },
      });
      ids.push(r.jobId);
    }
    const key = (id: string) => `${id}:summarize`;
    await waitFor(
      `${N} first calls held`,
      async () => {
        const byKey = (await h.simEffects()).byKey;
        return ids.every((id) => byKey[key(id)]?.requests === 1);
      },
      180_000,
    );
    const released = await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST', body: JSON.stringify({ path: '/v1/summaries' }) });
    expect(((await released.json()) as { released: number }).released).toBe(N);

    await Promise.all(ids.map((id) => h.waitForStatus(id, 'succeeded', 'a', 180_000)));
    const delays: number[] = [];
    for (const id of ids) {
      const attempts = await attemptsForJob(h.pool, id);
      // The 503 left the effect in doubt, so the retry reconciles by its key (applied once).
      expect(attempts.map((a) => [a.attempt, a.outcome, a.statusCode])).toEqual([
        [1, 'retryable', 503],
        [2, 'reconciled', 200],
      ]);
      const delayMs = attempts[0]!.delayMs!;
      delays.push(delayMs);
      // The one retry layer kept the delay it chose: the next attempt started no sooner.
      expect(attempts[1]!.startedAt.getTime() - attempts[0]!.finishedAt.getTime()).toBeGreaterThanOrEqual(delayMs - 50);
    }
    // The delays the failed attempts chose and recorded, by whole seconds. The textbook first
    // window (full jitter over 1 s, floored at 250 ms) puts every one of them into the first
    // second, where the server's timer granularity fires them together: a burst.
    const byDelaySecond = countBy(delays.map((d) => Math.floor(d / 1000)));
    expect(Math.max(...byDelaySecond.values()), `delays by second: ${show(byDelaySecond)}`).toBeLessThan(N / 2);
    expect(byDelaySecond.size).toBeGreaterThanOrEqual(4);
    expect(delays.filter((d) => d === MIN_RETRY_DELAY_MS).length).toBeLessThan(4);
    // What the upstream saw: its second request of each effect key, by wall-clock second. On
    // a loaded machine the worker's own pace also spreads them (and can bunch them: it starts
    // several at once after a stall), so this asserts the spread only, not a per-second bound.
    const byKey = (await h.simEffects()).byKey;
    const arrivals = countBy(ids.map((id) => Math.floor(Date.parse(byKey[key(id)].requestTimes[1]) / 1000)));
    expect(arrivals.size, `retries reaching the upstream per second: ${show(arrivals)}`).toBeGreaterThanOrEqual(3);
  }, 600_000);
});

function countBy(values: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return m;
}

const show = (m: Map<number, number>) =>
  [...m.entries()]
    .sort(([a], [b]) => a - b)
    .map(([k, n]) => `${k}:${n}`)
    .join(' ');
