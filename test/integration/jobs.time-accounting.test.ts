import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsForJob } from '../../store/attempts.js';
import { completionsByType } from '../../store/health.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// Queue time and execution time kept apart: a wait for a concurrency slot is queue time, a
// retry back-off is neither; execution is the sum of the attempts' execution spans.
let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('time-accounting', { workers: 0 });
  procs.push(await spawnWorker(h, { CONCURRENCY_LIMITS: JSON.stringify({ summarize: { perTenant: 1, global: 1 } }) }));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await h?.close();
});

const ms = (iso: string) => Date.parse(iso);

describe('time accounting', () => {
  it('counts a wait for a concurrency slot as queue time, not execution time', async () => {
    // A holds the only slot until the test releases the upstream's answer.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 600_000 });
    const a = (await h.submit('summarize', { text: 'Holds the slot.' })).body.jobId as string;
    await expect.poll(async () => (await h.simEffects()).byKey[`${a}:summarize`]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    const b = (await h.submit('summarize', { text: 'Waits for the slot.' })).body.jobId as string;
    await waitFor('B to wait for a slot', async () =>
      String((await h.api(`/v1/jobs/${b}`)).body.statusReason ?? '').includes('waiting for an upstream slot'),
    );
    const [bAttempt] = (await h.pool.query('SELECT started_at FROM activity_leases WHERE job_id = $1', [b])).rows;
    const releasedAt = Date.now();
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });

    const done = await h.waitForStatus(b, 'succeeded');
    // B could not execute before A's call ended, which was after the release.
    expect(ms(done.firstStartedAt)).toBeGreaterThanOrEqual(releasedAt);
    expect(ms(done.firstStartedAt)).toBeGreaterThan(bAttempt.started_at.getTime());
    expect(done.queuedMs).toBe(ms(done.firstStartedAt) - ms(done.createdAt));
    expect(done.executionMs).toBeLessThanOrEqual(ms(done.finishedAt) - ms(done.firstStartedAt) + 250);
  });

  it('does not count retry back-offs as execution time', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '2' });
    const c = (await h.submit('summarize', { text: 'Retried once.' })).body.jobId as string;
    const done = await h.waitForStatus(c, 'succeeded');
    expect(done.attempts).toBe(2);
    const rows = await attemptsForJob(h.pool, c);
    const first = rows.find((r) => r.attempt === 1)!;
    const second = rows.find((r) => r.attempt === 2)!;
    const backoff = second.startedAt.getTime() - first.finishedAt.getTime();
    expect(backoff).toBeGreaterThanOrEqual(1_500);
    // Execution is the two spans; the back-off between them is not in it.
    expect(done.executionMs).toBeLessThanOrEqual(ms(done.finishedAt) - ms(done.firstStartedAt) - backoff + 250);
    expect(done.executionMs).toBeGreaterThan(0);

    // The health figures' execution percentiles come from the same spans.
    const summarize = (await completionsByType(h.pool)).find((r) => r.job_type === 'summarize')!;
    const spans = (await h.pool.query(`SELECT max(execution_ms)::int AS max FROM job_intents WHERE job_type = 'summarize'`)).rows[0]
      .max as number;
    expect(Number(summarize.exec_p95_s) * 1000).toBeLessThanOrEqual(spans + 1);
  });
});
