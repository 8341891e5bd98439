import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { createProvider } from '../../activities/provider.js';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import type { PurchaseActivities } from '../../jobs/purchase/activities.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// A real late attempt: a worker process cut off from Temporal (its gRPC connection goes
// through a proxy the test partitions) but not from Postgres or the upstream. Temporal hands
// the attempt to another worker after the lease; the cut-off one never hears of it (no
// heartbeat answer, so no cancellation) and runs its stale attempt to the end. Its upstream
// call ends when the test releases the simulator's hold, not after a guessed delay; the job
// gets a long upstream timeout so that the call's own timeout does not end it first.
// (SIGSTOP would not do: on SIGCONT the SDK's local heartbeat timer cancels the attempt at
// once, racing its writes.)
let h: Harness;
let staleJobId = '';
let proxy: TcpProxy;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('stale-attempt', { workers: 0 });
  proxy = await startTcpProxy(inject('temporalAddress'));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await proxy?.close();
  await h?.close();
});

const releaseHolds = (path: string) =>
  fetch(`${h.sim.url}/__sim/holds/release`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ path }),
  });
const logLine = (p: WorkerProcess, jobId: string, msg: string) =>
  p
    .output()
    .split('\n')
    .find((l) => l.includes(jobId) && l.includes(msg));

describe('a stale attempt that resumes after a newer attempt moved the job on', () => {
  it('cannot set the job back to retrying: its status write is fenced', async () => {
    const stale = await spawnWorker(h, { TEMPORAL_ADDRESS: proxy.address });
    procs.push(stale);
    // Attempt 1's charge is held and then refused (503); the receipt is held so that the job
    // stays visibly `running` on its second step while the stale attempt resumes.
    await h.simFault({ path: '/v1/charges', times: 1, status: 503, delayMs: 600_000 });
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 600_000 });
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      budgets: { purchase: { upstreamTimeoutMs: 240_000 } },
    });
    const { jobId } = await jobs.submitJob({
      tenantId: 'tenant-a',
      idempotencyKey: `key-${uid()}`,
      type: 'purchase',
      input: { amountCents: 1200, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'late@example.com' },
    });
    await expect.poll(async () => (await h.simEffects()).byKey[`${jobId}:charge`]?.requests, { timeout: 60_000, interval: 100 }).toBe(1);
    proxy.partition();

    // Another worker takes over after the lease: charge attempt 2 succeeds, the receipt starts.
    await h.startWorker('stale-attempt-worker-2');
    await expect.poll(async () => (await h.simEffects()).byKey[`${jobId}:receipt`]?.requests, { timeout: 90_000, interval: 200 }).toBe(1);
    expect((await h.api(`/v1/jobs/${jobId}`)).body.status).toBe('running');

    // The stale attempt's held call now fails (503) and it runs failAttempt to the end,
    // status write included.
    expect(((await (await releaseHolds('/v1/charges')).json()) as { released: number }).released).toBe(1);
    await waitFor('the stale attempt to finish failing', async () => logLine(stale, jobId, 'attempt failed; retrying'), 60_000).catch(
      (err) => {
        throw new Error(`${(err as Error).message}\nstale worker output:\n${stale.output().slice(-4000)}`);
      },
    );
    const during = (await h.api(`/v1/jobs/${jobId}`)).body;
    expect(during.status).toBe('running');
    expect(during.error).toBeUndefined();
    expect(logLine(stale, jobId, 'its status write was refused')).toBeDefined();

    await releaseHolds('/v1/receipts');
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 90_000);
    expect((await h.simEffects()).byKey[`${jobId}:charge`]).toMatchObject({ applied: 1 });
    expect(done.result.receiptId).toBeTruthy();
    staleJobId = jobId;
  });

  it('cannot rewrite the effect row either: a superseded attempt claims and records nothing', async () => {
    // The same charge step once more as its attempt 1 (the lease rows are the real ones the
    // takeover above wrote), against the real database and upstream.
    const lease = (
      await h.pool.query(
        `SELECT run_id, activity_id FROM activity_leases WHERE job_id = $1 AND activity_type = 'chargeCustomer' AND attempt = 2`,
        [staleJobId],
      )
    ).rows[0];
    const key = `${staleJobId}:charge`;
    const before = (await h.pool.query('SELECT * FROM effects WHERE effect_key = $1', [key])).rows[0];
    const acts = createActivities({
      pool: h.pool,
      provider: createProvider(h.sim.url),
      log: h.log,
      codeVersion: 'test',
      jobs: defaultJobRegistry,
      limits: defaultJobRegistry.concurrencyLimits(),
    });
    const env = new MockActivityEnvironment({
      attempt: 1,
      heartbeatTimeoutMs: 10_000,
      activityId: lease.activity_id,
      workflowExecution: { workflowId: staleJobId, runId: lease.run_id },
    });
    await expect(
      env.run(acts.chargeCustomer as PurchaseActivities['chargeCustomer'], {
        jobId: staleJobId,
        tenantId: 'tenant-a',
        jobType: 'purchase' as const,
        priority: 'normal' as const,
      }),
    ).rejects.toThrow(/stale attempt/);
    expect((await h.pool.query('SELECT * FROM effects WHERE effect_key = $1', [key])).rows[0]).toEqual(before);
    expect((await h.simEffects()).byKey[key]).toMatchObject({ applied: 1, requests: 2 });
  });
});
