import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';

// Issue 38 §5 / F2: one tenant's backlog must not hold another's jobs back. Every job's
// workflow carries its tenant as Temporal's fairness key (services/start-job.ts `taskPriority`),
// so the matching service dispatches the shared task queue's backlog round-robin across tenants
// instead of first in, first out. A property, never a latency: tenant A's flood is queued
// first, tenant B's few after it, and B's jobs all succeed while A's flood is mostly unfinished.
// The worker starts only once both are queued, so the backlog's order does not depend on how
// fast this machine submits.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('ops-fairness', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const FLOOD = 200;
const B_JOBS = 5;
/** Each upstream call takes this long: A's flood (8 calls at a time, its per-tenant cap) lasts FLOOD / 8 x 2 s at least. */
const CALL_MS = 2_000;

async function succeededOf(tenant: string): Promise<number> {
  const r = await h.pool.query<{ n: string }>(`SELECT count(*) AS n FROM job_intents WHERE tenant_id = $1 AND status = 'succeeded'`, [
    tenant,
  ]);
  return Number(r.rows[0]!.n);
}

describe("one tenant's flood", () => {
  it("does not hold another tenant's jobs back: B's jobs all succeed while A's flood is mostly unfinished", async () => {
    await h.simFault({ path: '/v1/summaries', status: 200, delayMs: CALL_MS, times: FLOOD + B_JOBS + 50 });
    const run = uid();
    for (let i = 0; i < FLOOD; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, FLOOD - i) }, (_, j) => h.submit('summarize', { text: `Flood ${run} ${i + j}.` })),
      );
      for (const r of batch) expect(r.status).toBe(202);
    }
    const b: string[] = [];
    for (let i = 0; i < B_JOBS; i++) {
      const r = await h.submit('summarize', { text: `Tenant B ${run} ${i}.` }, { tenant: 'b' });
      expect(r.status).toBe(202);
      b.push(r.body.jobId);
    }
    await h.startWorker('ops-fairness-worker');
    for (const id of b) await h.waitForStatus(id, 'succeeded', 'b', 300_000);
    const aDone = await succeededOf('tenant-a');
    // First in, first out, B's tasks wait behind all of A's: A has finished several rounds of 8 by then.
    expect(aDone, `${aDone} of A's ${FLOOD} had succeeded when B's ${B_JOBS} had`).toBeLessThanOrEqual(FLOOD / 10);
    // And A's flood is not starved either: it finishes.
    await waitFor(`A's flood to finish`, async () => (await succeededOf('tenant-a')) === FLOOD, 900_000, 2_000);
  }, 1_200_000);
});
