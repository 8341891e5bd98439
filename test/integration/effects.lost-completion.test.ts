import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { attemptsForJob } from '../../store/attempts.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// What a Temporal outage longer than the SDK's completion retries does to one attempt: the
// attempt stores its effect and result, but its completion never reaches the server, which
// runs the activity again after the lease. Produced for real: the worker process reaches
// Temporal through a proxy the test partitions, while Postgres and the upstream stay up.
let h: Harness;
let proxy: TcpProxy;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('lost-completion', { workers: 0 });
  proxy = await startTcpProxy(inject('temporalAddress'));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await proxy?.close();
  await h?.close();
});

describe('an attempt whose completion was lost runs again after the result was stored', () => {
  it('reuses the effect, keeps the first finish time, and counts both attempts', async () => {
    const first = await spawnWorker(h, { TEMPORAL_ADDRESS: proxy.address });
    procs.push(first);
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 600_000 });
    const r = await h.submit('summarize', { text: 'Stored, but Temporal never heard.' });
    const jobId = r.body.jobId as string;
    await expect.poll(async () => (await h.simEffects()).byKey[`${jobId}:summarize`]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    proxy.partition();
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    const stored = await h.waitForStatus(jobId, 'succeeded');
    expect(stored.attempts).toBe(1);

    // The server never got the completion: after the lease, attempt 2 runs on another worker.
    await h.startWorker('lost-completion-worker-2');
    await h.temporal.workflow.getHandle(jobId).result();
    const after = (await h.api(`/v1/jobs/${jobId}`)).body;
    const rows = await attemptsForJob(h.pool, jobId);
    expect(rows.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'succeeded'],
      [2, 'reused'],
    ]);
    expect(after.attempts).toBe(new Set(rows.map((a) => a.attempt)).size);
    expect(after.finishedAt).toBe(stored.finishedAt);
    expect(after.executionMs).toBe(stored.executionMs);
    expect(after.result).toEqual(stored.result);
    expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
  });
});
