// Fairness between tenants (issue 38 §5, F2): tenant A submits a flood at once (1,000 jobs; 50
// with --quick), then tenant B submits 10 (5); B's p95 submit-to-success latency is compared with
// B's latency when A is idle, in the same run (the sides alternate per repeat). Two floods:
//  - `fairness.b-p95-during-flood` (the row, target at most 2x): A's client submits its
//    1,000 with 32 in flight, and B submits as soon as the last of them was accepted;
//  - `fairness.b-p95-during-delayed-flood` (said, no target): A's 1,000 are delayed jobs due at
//    one moment, and B submits plainly half a second after it. Temporal's history service turns
//    the due start timers into workflow tasks first in, first out, before B's: what fairness
//    keys on the task queue cannot reorder.
// Latency is by the database clock: `finished_at` minus the job's start (its `run_at`, else
// `created_at`) of B's own rows. Every upstream call is held D ms at the simulator, so A's flood
// lasts (at its per-tenant cap of 8 calls at a time) long enough for B to meet it. The product's
// default concurrency caps apply (8 per tenant, 32 per type), not the raised ones of the
// throughput section: the caps are part of what keeps B going. Where B's median and slowest job
// (and a sample of A's) waited, from their Temporal histories (fairness-stages.ts): submit to
// start, workflow-task queue, activity queue, activity run, timers; printed per repeat and kept in
// the rows' details.
import { upsertTenant } from '../../store/tenants.js';
import { DEFAULT_CONCURRENCY } from '../../contract/job-types.js';
import { UnavailableError } from '../../lib/errors.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, pool, quantile, row, spread, waitUntil, type BenchRow } from './stats.js';
import { jobStages, medianStages, stagesText, type JobStages } from './fairness-stages.js';

export async function measureFairness(stack: BenchStack): Promise<BenchRow[]> {
  const flood = stack.quick ? 50 : 1_000;
  const bJobs = stack.quick ? 5 : 10;
  const holdMs = stack.quick ? 100 : 200;
  const repeats = stack.quick ? 2 : 3;
  const queue = `bench-fairness-${uid()}`;
  const worker = await stack.startProductWorker(queue, { limits: { summarize: DEFAULT_CONCURRENCY } });
  const jobs = stack.jobsClient(queue);
  const idle: number[] = [];
  const modes = { submitted: new FloodSide(), delayed: new FloodSide() };
  const idleStages: JobStages[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      const a = `bench-fair-a-${uid()}`;
      const b = `bench-fair-b-${uid()}`;
      await upsertTenant(stack.pool, b, `key-${b}`);
      const submit = (tenant: string, i: number, runAt?: Date) =>
        jobs.submitJob({
          tenantId: tenant,
          type: 'summarize',
          idempotencyKey: `fair-${tenant}-${i}`,
          input: { text: `Fairness ${i}.` },
          ...(runAt ? { runAt } : {}),
        });
      const runB = async (tenant: string, into: JobStages[]) => {
        const ids = (await pool(bJobs, bJobs, (i) => submit(tenant, i))).map((x) => x.jobId);
        await waitUntil(`B's ${bJobs} jobs to succeed`, async () => (await doneCount(stack, ids)) === ids.length, 600_000, 100);
        const at = await submittedAt(stack, ids);
        into.push(await medianStages(stack.temporal, ids, at));
        into.push(await slowestStages(stack, ids, at));
        return p95Latency(stack, ids);
      };
      const runFlood = async (side: FloodSide, delayed: boolean) => {
        const tenantA = `${a}-${delayed ? 'delayed' : 'submitted'}`;
        const tenantB = `${b}-${delayed ? 'delayed' : 'submitted'}`;
        await upsertTenant(stack.pool, tenantA, `key-${tenantA}`);
        await upsertTenant(stack.pool, tenantB, `key-${tenantB}`);
        await stack.simFault({ path: '/v1/summaries', times: flood + bJobs, status: 200, delayMs: holdMs });
        let aIds: string[];
        if (delayed) {
          // A's flood as delayed jobs that all start at one moment (Temporal's start delay); B
          // submits half a second after that moment, plainly.
          const at = Date.now() + Math.max(10_000, flood * 30);
          aIds = (await pool(flood, 8, (i) => submitRetrying(() => submit(tenantA, i, new Date(at))))).map((x) => x.jobId);
          await new Promise((res) => setTimeout(res, Math.max(0, at + 500 - Date.now())));
        } else {
          // A submits its flood at once (32 submits in flight: the intake, not the bench, sets
          // the pace), and B submits as soon as the last of A's has been accepted.
          aIds = (await pool(flood, 32, (i) => submitRetrying(() => submit(tenantA, i)))).map((x) => x.jobId);
        }
        side.aUnfinishedAtB.push(flood - (await tenantDone(stack, tenantA)));
        side.latency.push(await runB(tenantB, side.stages));
        side.aDoneAtB.push(await tenantDone(stack, tenantA));
        await waitUntil(`A's flood to finish`, async () => (await tenantDone(stack, tenantA)) === flood, 1_800_000, 500);
        // What A's jobs went through (a sample of 20 spread over the flood).
        const sample = aIds.filter((_, i) => i % Math.max(1, Math.floor(flood / 20)) === 0);
        side.aStages.push(await medianStages(stack.temporal, sample));
      };
      const sides = [
        async () => {
          await stack.simFault({ path: '/v1/summaries', times: bJobs, status: 200, delayMs: holdMs });
          idle.push(await runB(`${b}`, idleStages));
        },
        () => runFlood(modes.submitted, false),
        () => runFlood(modes.delayed, true),
      ];
      for (const side of alternate(sides, r)) await side();
      stack.log(`  fairness repeat ${r + 1}/${repeats}: B p95 ${idle.at(-1)!.toFixed(0)} ms with A idle`);
      stack.log(`    B's median, slowest job with A idle: ${stagesText(idleStages.at(-2)!)}; ${stagesText(idleStages.at(-1)!)}`);
      for (const [name, side] of Object.entries(modes)) {
        stack.log(
          `    A's flood ${name}: B p95 ${side.latency.at(-1)!.toFixed(0)} ms (A had ${side.aUnfinishedAtB.at(-1)} of ${flood} unfinished when B submitted, ${side.aDoneAtB.at(-1)} finished when B had)`,
        );
        stack.log(`      B's median job: ${stagesText(side.stages.at(-2)!)}`);
        stack.log(`      B's slowest job: ${stagesText(side.stages.at(-1)!)}`);
        stack.log(`      A's median job: ${stagesText(side.aStages.at(-1)!)}`);
      }
    }
  } finally {
    await jobs.close();
    await worker.stop();
  }
  const base = { label: `the same ${bJobs} B jobs with A idle (same run)`, unit: 'ms', value: spread(idle) };
  const details = (side: FloodSide) => ({
    aUnfinishedWhenBSubmitted: side.aUnfinishedAtB,
    aFinishedWhenBFinished: side.aDoneAtB,
    bStages: side.stages,
    aStages: side.aStages,
    bIdleStages: idleStages,
  });
  return [
    row({
      id: 'fairness.b-p95-during-flood',
      section: 'fairness',
      figure: `tenant B's p95 submit-to-success, ${bJobs} jobs submitted right after tenant A submitted ${flood} at once, upstream held ${holdMs} ms`,
      unit: 'ms',
      value: spread(modes.submitted.latency),
      baseline: base,
      sense: 'lower-better',
      paired: true,
      details: details(modes.submitted),
      notes: `target <= 2x; Temporal fairness keys (tenant) with matching.enableFairness; A had ${modes.submitted.aUnfinishedAtB.join(', ')} of ${flood} unfinished when B submitted`,
    }),
    row({
      id: 'fairness.b-p95-during-delayed-flood',
      section: 'fairness',
      figure: `tenant B's p95 submit-to-success, ${bJobs} jobs submitted half a second after tenant A's ${flood} delayed jobs all became due, upstream held ${holdMs} ms`,
      unit: 'ms',
      value: spread(modes.delayed.latency),
      baseline: base,
      sense: 'lower-better',
      paired: true,
      details: details(modes.delayed),
      notes: `no target: A's ${flood} start timers fire at one moment and Temporal's history service turns them into workflow tasks first in, first out, before B's; task-queue fairness orders only what reaches the task queue`,
    }),
  ];
}

/** One flood variant's figures, per repeat. */
class FloodSide {
  latency: number[] = [];
  aUnfinishedAtB: number[] = [];
  aDoneAtB: number[] = [];
  /** B's median job, then B's slowest job, per repeat. */
  stages: JobStages[] = [];
  aStages: JobStages[] = [];
}

/** A submit that Postgres could not take (503) is retried with the same key, as a client would. */
async function submitRetrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof UnavailableError) || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, err.retryAfterSeconds * 1000));
    }
  }
}

/** The stages of the job that took longest from submit to success. */
async function slowestStages(stack: BenchStack, ids: string[], at: Map<string, number>): Promise<JobStages> {
  const r = await stack.pool.query<{ job_id: string }>(
    `SELECT job_id FROM job_intents WHERE job_id = ANY($1::text[]) ORDER BY finished_at - created_at DESC LIMIT 1`,
    [ids],
  );
  const id = r.rows[0]!.job_id;
  return jobStages(stack.temporal, id, at.get(id));
}

/** Each job's submit time (its row's `created_at`), by job ID, in epoch ms. */
async function submittedAt(stack: BenchStack, ids: string[]): Promise<Map<string, number>> {
  const r = await stack.pool.query<{ job_id: string; at: Date }>(
    `SELECT job_id, created_at AS at FROM job_intents WHERE job_id = ANY($1::text[])`,
    [ids],
  );
  return new Map(r.rows.map((x) => [x.job_id, x.at.getTime()]));
}

async function doneCount(stack: BenchStack, ids: string[]): Promise<number> {
  const r = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1::text[]) AND status = 'succeeded'`,
    [ids],
  );
  return r.rows[0]!.n;
}

async function tenantDone(stack: BenchStack, tenant: string): Promise<number> {
  const r = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_intents WHERE tenant_id = $1 AND status = 'succeeded'`,
    [tenant],
  );
  return r.rows[0]!.n;
}

/** p95 of the jobs' submit-to-success latency (from their start time when delayed), by the database clock. */
async function p95Latency(stack: BenchStack, ids: string[]): Promise<number> {
  const r = await stack.pool.query<{ ms: number }>(
    `SELECT (extract(epoch FROM finished_at - greatest(created_at, coalesce(run_at, created_at))) * 1000)::float8 AS ms
       FROM job_intents WHERE job_id = ANY($1::text[])`,
    [ids],
  );
  return quantile(
    r.rows.map((x) => x.ms).sort((x, y) => x - y),
    0.95,
  );
}
