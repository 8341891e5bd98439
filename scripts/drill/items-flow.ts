import type { DrillStack } from './stack.js';
import { check, http, simFault, simReset, submit, uid, waitUntil, type DrillItem } from './support.js';

/** Drill items of issue 38's everyday operations: fair share between tenants. */

const FLOOD = 200;
const B_JOBS = 5;
/** Each upstream call of the item is held this long: A's flood lasts FLOOD / 8 x HOLD_MS at least (25 s), far longer than B needs even on a quiet machine, where A runs at its cap (8 calls at a time). */
const HOLD_MS = 1_000;

/** How many of these jobs succeeded: the flood's own, never the tenant's jobs of earlier items. */
async function succeeded(s: DrillStack, jobIds: string[]): Promise<number> {
  const r = await s.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1::text[]) AND status = 'succeeded'`,
    [jobIds],
  );
  return r.rows[0]!.n;
}

export const fairness: DrillItem = {
  item: '12 fair share between tenants',
  about: "tenant B's jobs keep flowing while tenant A floods the shared queue (Temporal fairness key = tenant)",
  async run(s) {
    await simReset(s);
    // Tenant B of its own, through the admin API, with a key.
    const b = `drill-b-${uid()}`;
    check((await http(s, '/v1/admin/tenants', { admin: true, body: { id: b } })).status === 201, `tenant ${b} not created`);
    const key = (await http(s, `/v1/admin/tenants/${b}/keys`, { admin: true, body: { name: 'drill' } })).body?.key;
    check(typeof key === 'string', 'no key for tenant B');
    // Every summary takes HOLD_MS: A's flood lasts FLOOD / 8 x HOLD_MS at least (its per-tenant cap of 8).
    await simFault(s, { path: '/v1/summaries', status: 200, delayMs: HOLD_MS, times: FLOOD + B_JOBS + 20 });
    // A's flood starts at one moment (a delayed start) and B's a second later, so the order on
    // the queue does not depend on how fast this machine submits.
    // 15 s: time enough to submit the flood on a loaded machine (the row says so if not), little to wait.
    const floodAt = Date.now() + 15_000;
    const flood: string[] = [];
    for (let i = 0; i < FLOOD; i += 20)
      for (const r of await Promise.all(
        Array.from({ length: Math.min(20, FLOOD - i) }, (_, j) =>
          submit(s, 'summarize', { text: `Flood ${i + j}.` }, undefined, { runAt: new Date(floodAt).toISOString() }),
        ),
      )) {
        check(r.status === 202, `A's submit answered ${r.status}`);
        flood.push(r.body.jobId);
      }
    // On a very slow machine the last of A's jobs start as they are submitted: said, not failed.
    const submitLateMs = Math.max(0, Date.now() - floodAt);
    const bAt = floodAt + 1_000;
    const ids: string[] = [];
    for (let i = 0; i < B_JOBS; i++) {
      const r = await http(s, '/v1/jobs', {
        body: { type: 'summarize', input: { text: `Tenant B ${i}.` }, runAt: new Date(bAt).toISOString() },
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': `drill-b-${uid()}` },
      });
      check(r.status === 202, `B's submit answered ${r.status}`);
      ids.push(r.body.jobId);
    }
    await waitUntil(
      "B's jobs to succeed",
      async () => {
        const r = await s.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1::text[]) AND status = 'succeeded'`,
          [ids],
        );
        return r.rows[0]!.n === ids.length;
      },
      300_000,
    );
    const bMs = Date.now() - bAt;
    const aDone = await succeeded(s, flood);
    check(aDone < FLOOD / 2, `${aDone} of A's ${FLOOD} had finished when B's ${B_JOBS} had (B waited ${bMs} ms)`);
    await waitUntil("A's flood to finish", async () => (await succeeded(s, flood)) === FLOOD, 600_000);
    return {
      done: `tenant A's ${FLOOD} summarize jobs start at once (each upstream call held ${HOLD_MS} ms), tenant B's ${B_JOBS} a second later`,
      observed: `B's ${B_JOBS} succeeded ${(bMs / 1000).toFixed(1)} s after their start, when A had finished ${aDone} of ${FLOOD}; A's flood then finished too${submitLateMs > 0 ? ` (A's submits ended ${submitLateMs} ms after its start)` : ''}`,
    };
  },
};
