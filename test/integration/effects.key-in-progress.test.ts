import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('key-in-progress', { workers: 0 });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await h?.close();
});

describe('a takeover reaches an upstream that is still working on the first request (409 in progress)', () => {
  it('retries with the same key, honouring Retry-After, and the effect is applied once', async () => {
    const first = await spawnWorker(h);
    procs.push(first);
    // The upstream holds the key's claim while it "processes" the first request, until the
    // test releases it: any request with the same key meanwhile gets 409 request_in_progress.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 600_000, hold: 'processing' });
    const r = await h.submit('summarize', { text: 'Still in progress upstream.' });
    const jobId = r.body.jobId as string;
    const key = `${jobId}:summarize`;
    await expect.poll(async () => (await h.simEffects()).byKey[key]?.requests, { timeout: 60_000, interval: 100 }).toBe(1);
    await first.kill('SIGKILL');

    // The next attempt (after the lease runs out) meets the upstream still processing.
    await h.startWorker('key-in-progress-worker-2');
    const seen = await waitFor(
      'an attempt after the takeover to finish',
      async () => {
        const rows = await attemptsForJob(h.pool, jobId);
        return rows.find((a) => a.attempt >= 2);
      },
      90_000,
    );
    expect(seen).toMatchObject({ outcome: 'retryable', errorClass: 'request_in_progress', statusCode: 409, delayMs: 1_000 });
    const during = await h.api(`/v1/jobs/${jobId}`);
    expect(during.body.status).not.toBe('dead_lettered');
    // Still in doubt: the request in progress may apply it.
    const effect = await h.pool.query('SELECT state, in_doubt FROM effects WHERE effect_key = $1', [key]);
    expect(effect.rows[0]).toEqual({ state: 'pending', in_doubt: true });

    // The upstream finishes the first request; the next attempt gets its stored answer.
    const released = await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    expect(released.status).toBe(200);
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 120_000);
    expect(done.result.summary).toBe('Still in progress upstream.');
    expect((await h.simEffects()).byKey[key].applied).toBe(1);
  });
});
