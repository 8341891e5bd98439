import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withLeaseTracking } from '../../activities/lease-tracking.js';
import { ADMIN_KEY, startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('health-leases', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const health = async () =>
  (await h.api('/v1/admin/queue-health', { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body;

describe('lease expirations', () => {
  it('an attempt that never ended is flagged by the next one, with its last heartbeat, and counted', async () => {
    const job = await h.submit('summarize', { text: 'lease' });
    const jobId = job.body.jobId as string;
    const info = (attempt: number) => ({
      attempt,
      heartbeatTimeoutMs: 10_000,
      startToCloseTimeoutMs: 300_000,
      activityId: '3',
      activityType: 'summarizeText',
      workflowExecution: { workflowId: jobId, runId: 'run-1' },
      heartbeatDetails: attempt > 1 ? { progress: 'halfway' } : undefined,
    });
    let releaseZombie!: () => void;
    const zombie = new Promise<string>((resolve) => {
      releaseZombie = () => resolve('late');
    });
    const acts = withLeaseTracking(
      { pool: h.pool, log: h.log },
      {
        async slow() {
          return zombie;
        },
        async quick() {
          return 'ok';
        },
      },
    );
    // Attempt 1 starts and never ends (its worker "died"): it holds the lease row open.
    const first = new MockActivityEnvironment(info(1) as never).run(acts.slow);
    await waitFor(
      'attempt 1 recorded',
      async () => (await h.pool.query('SELECT 1 FROM activity_leases WHERE job_id = $1', [jobId])).rowCount === 1,
    );
    // Attempt 2 runs: it finds attempt 1 without an end and flags it.
    expect(await new MockActivityEnvironment(info(2) as never).run(acts.quick)).toBe('ok');
    const rows = (
      await h.pool.query(
        'SELECT attempt, outcome, heartbeat_details, expired_detected_at FROM activity_leases WHERE job_id = $1 ORDER BY attempt',
        [jobId],
      )
    ).rows;
    expect(rows.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'lease_expired'],
      [2, 'completed'],
    ]);
    expect(rows[0].heartbeat_details).toEqual({ progress: 'halfway' });

    // Running attempt 2 again (a replayed detection) flags nothing twice.
    await new MockActivityEnvironment(info(2) as never).run(acts.quick);
    // The zombie finishing late keeps the verdict.
    releaseZombie();
    expect(await first).toBe('late');
    expect((await h.pool.query(`SELECT outcome FROM activity_leases WHERE job_id = $1 AND attempt = 1`, [jobId])).rows[0].outcome).toBe(
      'lease_expired',
    );

    const f = await health();
    expect(f.leaseExpirations.perWindow).toEqual({ '1m': 1, '5m': 1, '15m': 1 });
    expect(f.jobTypes.summarize.leaseExpirations['1m']).toBe(1);
    const m = await fetch(`${h.opsUrl}/metrics`).then((r) => r.text());
    expect(m).toContain('durable_jobs_lease_expirations_recorded{job_type="summarize"} 1');
  });

  it('does not track activities without a lease (no heartbeat timeout)', async () => {
    const acts = withLeaseTracking(
      { pool: h.pool, log: h.log },
      {
        async bookkeeping() {
          return 1;
        },
      },
    );
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM activity_leases')).rows[0].n;
    await new MockActivityEnvironment({ attempt: 3, workflowExecution: { workflowId: 'wf-x', runId: 'r' } } as never).run(acts.bookkeeping);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM activity_leases')).rows[0].n).toBe(before);
  });
});
