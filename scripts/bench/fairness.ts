// Fairness between tenants (issue 38 §5, F2): tenant A submits a flood at once (1,000 jobs;
// 50 with --quick; all with one start time), then tenant B submits 10 (5) starting half a second
// later; B's p95 submit-to-success latency is compared with B's latency when A is idle, in the
// same run (the sides alternate per repeat). Latency is by the database clock: `finished_at`
// minus the job's start (its `run_at`, else `created_at`) of B's own rows. Every upstream call is
// held D ms at the simulator, so A's flood lasts (at its per-tenant cap of 8 calls at a time)
// long enough for B to meet it. The product's default concurrency caps apply (8 per tenant, 32
// per type), not the raised ones of the throughput section: the caps are part of what keeps B
// going. Target: at most 2x. Where B's jobs (and a sample of A's) waited, from their Temporal
// histories (fairness-stages.ts): workflow-task queue, activity queue, activity run, timers.
// These are printed per repeat and kept in the row's details (`bMedianStages`).
import { upsertTenant } from '../../store/tenants.js';
import { DEFAULT_CONCURRENCY } from '../../contract/job-types.js';
import { UnavailableError } from '../../lib/errors.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, pool, quantile, row, spread, waitUntil, type BenchRow } from './stats.js';
import { medianStages, stagesText, type JobStages } from './fairness-stages.js';

export async function measureFairness(stack: BenchStack): Promise<BenchRow[]> {
  const flood = stack.quick ? 50 : 1_000;
  const bJobs = stack.quick ? 5 : 10;
  const holdMs = stack.quick ? 100 : 200;
  const repeats = stack.quick ? 2 : 3;
  const queue = `bench-fairness-${uid()}`;
  const worker = await stack.startProductWorker(queue, { limits: { summarize: DEFAULT_CONCURRENCY } });
  const jobs = stack.jobsClient(queue);
  const idle: number[] = [];
  const loaded: number[] = [];
  const aDoneAtB: number[] = [];
  const stages: { idle: JobStages[]; loaded: JobStages[]; flood: JobStages[] } = { idle: [], loaded: [], flood: [] };
  try {
    for (let r = 0; r < repeats; r++) {
      const a = `bench-fair-a-${uid()}`;
      const b = `bench-fair-b-${uid()}`;
      await upsertTenant(stack.pool, a, `key-${a}`);
      await upsertTenant(stack.pool, b, `key-${b}`);
      const submit = (tenant: string, i: number, runAt?: Date) =>
        jobs.submitJob({
          tenantId: tenant,
          type: 'summarize',
          idempotencyKey: `fair-${tenant}-${i}`,
          input: { text: `Fairness ${i}.` },
          ...(runAt ? { runAt } : {}),
        });
      const runB = async (tenant: string, into: JobStages[], runAt?: Date) => {
        const ids = (await pool(bJobs, bJobs, (i) => submit(tenant, i, runAt))).map((x) => x.jobId);
        await waitUntil(`B's ${bJobs} jobs to succeed`, async () => (await doneCount(stack, ids)) === ids.length, 600_000, 100);
        into.push(await medianStages(stack.temporal, ids));
        return p95Latency(stack, ids);
      };
      const sides = [
        async () => {
          await stack.simFault({ path: '/v1/summaries', times: bJobs, status: 200, delayMs: holdMs });
          idle.push(await runB(`${b}`, stages.idle));
        },
        async () => {
          await stack.simFault({ path: '/v1/summaries', times: flood + bJobs, status: 200, delayMs: holdMs });
          // "At once": A's flood starts at one moment (Temporal's start delay), B's half a second
          // later, so the backlog B meets does not depend on how fast the bench submits.
          const at = Date.now() + Math.max(10_000, flood * 30);
          // 8 at a time: the intake's pool, not the flood, must not be what fails on a loaded machine.
          const aIds = (await pool(flood, 8, (i) => submitRetrying(() => submit(a, i, new Date(at))))).map((x) => x.jobId);
          const b2 = `${b}-flood`;
          await upsertTenant(stack.pool, b2, `key-${b2}`);
          loaded.push(await runB(b2, stages.loaded, new Date(at + 500)));
          aDoneAtB.push(await tenantDone(stack, a));
          await waitUntil(`A's flood to finish`, async () => (await tenantDone(stack, a)) === flood, 1_800_000, 500);
          // What A's waiting jobs cost the shared workers: their tasks (a sample of 20 spread over the flood).
          const sample = aIds.filter((_, i) => i % Math.max(1, Math.floor(flood / 20)) === 0);
          stages.flood.push(await medianStages(stack.temporal, sample));
        },
      ];
      for (const side of alternate(sides, r)) await side();
      stack.log(
        `  fairness repeat ${r + 1}/${repeats}: B p95 ${loaded.at(-1)!.toFixed(0)} ms during A's flood of ${flood} (A had finished ${aDoneAtB.at(-1)}), ${idle.at(-1)!.toFixed(0)} ms with A idle`,
      );
      stack.log(`    B's median job during the flood: ${stagesText(stages.loaded.at(-1)!)}`);
      stack.log(`    B's median job with A idle:      ${stagesText(stages.idle.at(-1)!)}`);
      stack.log(`    A's median job (flood sample):   ${stagesText(stages.flood.at(-1)!)}`);
    }
  } finally {
    await jobs.close();
    await worker.stop();
  }
  return [
    row({
      id: 'fairness.b-p95-during-flood',
      section: 'fairness',
      figure: `tenant B's p95 submit-to-success, ${bJobs} jobs submitted right after tenant A's ${flood}, upstream held ${holdMs} ms`,
      unit: 'ms',
      value: spread(loaded),
      baseline: { label: `the same ${bJobs} B jobs with A idle (same run)`, unit: 'ms', value: spread(idle) },
      sense: 'lower-better',
      paired: true,
      details: { aFinishedWhenBFinished: aDoneAtB, bMedianStages: stages },
      notes: `target <= 2x; Temporal fairness keys (tenant) with matching.enableFairness; A had finished ${aDoneAtB.join(', ')} of ${flood} when B's last job had`,
    }),
  ];
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
