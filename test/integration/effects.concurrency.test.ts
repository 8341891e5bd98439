import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, uid, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

let h: Harness;
const procs: WorkerProcess[] = [];
const LIMITS = JSON.stringify({ summarize: { perTenant: 2, global: 6 } });
beforeAll(async () => {
  h = await startHarness('concurrency', { workers: 0 });
  // Two real worker processes: the caps must hold across processes, not just in one.
  procs.push(...(await Promise.all([spawnWorker(h, { CONCURRENCY_LIMITS: LIMITS }), spawnWorker(h, { CONCURRENCY_LIMITS: LIMITS })])));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  await h?.close();
});

describe('concurrency budgets beside the retry budget', () => {
  it('a tenant with 50 jobs never has more than 2 upstream calls in flight, and another tenant still runs', async () => {
    await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' });
    // Every call is held 300 ms by the upstream, so calls overlap unless the cap stops them.
    await h.simFault({ path: '/v1/summaries', times: 60, status: 200, delayMs: 300 });
    const burst = await Promise.all(
      Array.from({ length: 50 }, (_, i) => h.submit('summarize', { text: `Burst job ${i}.` }, { key: `burst-${uid()}` })),
    );
    expect(burst.every((r) => r.status === 202)).toBe(true);
    const ids = burst.map((r) => r.body.jobId as string);

    // Some of the burst is visibly waiting for a slot: queued with the reason, not failing.
    const waiting = await expect
      .poll(
        async () => {
          const rows = await h.pool.query(
            `SELECT count(*)::int AS n FROM job_intents WHERE status = 'queued' AND status_reason LIKE 'waiting for an upstream slot%'`,
          );
          return rows.rows[0].n;
        },
        { timeout: 60_000, interval: 200 },
      )
      .toBeGreaterThan(0);
    void waiting;

    const other = await h.submit('summarize', { text: 'Tenant B is not starved.' }, { tenant: 'b' });
    await h.waitForStatus(other.body.jobId, 'succeeded', 'b', 60_000);
    const unfinished = await h.pool.query(
      `SELECT count(*)::int AS n FROM job_intents WHERE tenant_id = 'tenant-a' AND status <> 'succeeded'`,
    );
    expect(unfinished.rows[0].n).toBeGreaterThan(0);

    for (const id of ids) await h.waitForStatus(id, 'succeeded', 'a', 180_000);
    const effects = await h.simEffects();
    expect(effects.peakInFlightByTenant['tenant-a']).toBeLessThanOrEqual(2);
    expect(effects.peakInFlightByTenant['tenant-a']).toBe(2);
    expect(effects.peakInFlight).toBeLessThanOrEqual(3);
    for (const id of ids) expect(effects.byKey[`${id}:summarize`].applied).toBe(1);
    const failures = await h.pool.query(
      `SELECT outcome, error_class, count(*)::int AS n FROM job_attempts WHERE outcome <> 'succeeded' GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(failures.rows).toEqual([]);
    const leases = await h.pool.query('SELECT count(*)::int AS n FROM concurrency_leases');
    expect(leases.rows[0].n).toBe(0);
  });
});
