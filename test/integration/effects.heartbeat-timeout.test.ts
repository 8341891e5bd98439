import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// An attempt whose heartbeat Temporal times out while its worker lives on (a slow or briefly
// cut-off worker, not a dead one): the worker's Temporal connection goes through a proxy the
// test partitions and heals; Postgres and the upstream stay reachable. With one activity slot
// the next attempt can only start after this one has ended, so it finds nothing left to flag:
// the attempt must record its own loss, or an operator counting attempts never sees it.
let h: Harness;
let proxy: TcpProxy;
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await startHarness('hb-timeout', { workers: 0 });
  proxy = await startTcpProxy(inject('temporalAddress'));
});
afterAll(async () => {
  await worker?.kill();
  await proxy?.close();
  await h?.close();
});

describe('an attempt whose heartbeat timed out on a live worker', () => {
  it('leaves a lease_expired attempt row and lease, once, and the job counts it', async () => {
    worker = await spawnWorker(h, { TEMPORAL_ADDRESS: proxy.address, WORKER_ACTIVITY_SLOTS: '1' });
    // Attempt 1's call is held (and would answer 503): only the lease can end it.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, delayMs: 600_000 });
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      budgets: { summarize: { heartbeatTimeoutMs: 3_000, upstreamTimeoutMs: 240_000 } },
    });
    const { jobId } = await jobs.submitJob({
      tenantId: 'tenant-a',
      idempotencyKey: `key-${uid()}`,
      type: 'summarize',
      input: { text: `A lease that ran out while its worker lived (${uid()}).` },
    });
    await expect.poll(async () => (await h.simEffects()).byKey[`${jobId}:summarize`]?.requests, { timeout: 60_000, interval: 100 }).toBe(1);
    proxy.partition();
    // Temporal times the attempt out (no heartbeat reaches it) and schedules attempt 2.
    await waitFor(
      'Temporal to time out attempt 1',
      async () => ((await h.temporal.workflow.getHandle(jobId).describe()).raw.pendingActivities?.[0]?.attempt ?? 0) >= 2,
      60_000,
      200,
    );
    proxy.heal();

    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 90_000);
    const rows = (
      await h.pool.query<{ attempt: number; outcome: string; error_class: string | null }>(
        'SELECT attempt, outcome, error_class FROM job_attempts WHERE job_id = $1 ORDER BY attempt, finished_at',
        [jobId],
      )
    ).rows;
    expect(rows).toEqual([
      { attempt: 1, outcome: 'lease_expired', error_class: 'lease_lost' },
      // Attempt 1's call was left in doubt: attempt 2 looks it up by key first (reconciled) or re-sends it.
      { attempt: 2, outcome: expect.stringMatching(/^(succeeded|reconciled)$/), error_class: null },
    ]);
    expect(done.attempts).toBe(2);
    const lease = (
      await h.pool.query<{ outcome: string; expired: boolean }>(
        `SELECT outcome, expired_detected_at IS NOT NULL AS expired FROM activity_leases WHERE job_id = $1 AND attempt = 1`,
        [jobId],
      )
    ).rows;
    expect(lease).toEqual([{ outcome: 'lease_expired', expired: true }]);
    // The attempt said so itself (attempt 2, started after its end, had nothing to flag).
    expect(worker.output()).toContain('attempt lost its lease (heartbeat timed out)');
    expect(worker.output()).not.toContain('previous attempt lost its lease');
    expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toMatchObject({ applied: 1 });
  }, 240_000);
});
