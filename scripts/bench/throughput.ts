// End-to-end throughput: N `summarize` jobs submitted through the client library until all
// succeeded, against N bare workflows (one no-op activity) on the same server with the same
// worker settings. Repeats alternate the two so that machine noise hits both alike.
import type pg from 'pg';
import { upsertTenant } from '../../store/tenants.js';
import { uid, type BenchStack } from './stack.js';
import { pool, row, spread, waitUntil, type BenchRow } from './stats.js';

const SUBMIT_CONCURRENCY = 16;

export interface ThroughputResult {
  rows: BenchRow[];
  summarizePerSec: number | null;
  commitsPerJob: number | null;
}

export async function measureThroughput(stack: BenchStack): Promise<ThroughputResult> {
  const n = stack.quick ? 20 : 300;
  const repeats = stack.quick ? 2 : 3;
  const productQueue = `bench-tp-${uid()}`;
  const bareQueue = `bench-tp-bare-${uid()}`;
  const product = await stack.startProductWorker(productQueue);
  const bare = await stack.startBareWorker(bareQueue);
  const jobs = stack.jobsClient(productQueue);
  const jobRates: number[] = [];
  const bareRates: number[] = [];
  const commits: number[] = [];
  let bareDone = 0;
  try {
    // Warm-up: first jobs pay for isolate creation and connection set-up.
    const warm = `bench-tp-warm-${uid()}`;
    await upsertTenant(stack.pool, warm, `key-${warm}`);
    await runSummarize(stack, jobs, warm, Math.min(5, n));
    await runBare(stack, bareQueue, `warm-${uid()}`, Math.min(5, n), bareDone);
    bareDone += Math.min(5, n);
    for (let r = 0; r < repeats; r++) {
      const tenant = `bench-tp-${r}-${uid()}`;
      await upsertTenant(stack.pool, tenant, `key-${tenant}`);
      const before = await xactCommits(stack.pool);
      const s = await runSummarize(stack, jobs, tenant, n);
      const after = await xactCommits(stack.pool);
      jobRates.push(s.perSec);
      // Our own polling transactions are not the product's: subtract them.
      commits.push((after - before - s.polls - 2) / n);
      const b = await runBare(stack, bareQueue, `bare-${r}-${uid()}`, n, bareDone);
      bareDone += n;
      bareRates.push(b.perSec);
      stack.log(`  throughput repeat ${r + 1}/${repeats}: summarize ${s.perSec.toFixed(1)}/s, bare ${b.perSec.toFixed(1)}/s`);
    }
  } finally {
    await product.stop();
    await bare.stop();
  }
  const jobSpread = spread(jobRates);
  const commitSpread = spread(commits);
  return {
    summarizePerSec: jobSpread.median,
    commitsPerJob: commitSpread.median,
    rows: [
      row({
        id: 'throughput.summarize',
        section: 'throughput',
        figure: `summarize jobs end to end (N=${n}, ${SUBMIT_CONCURRENCY} submitters)`,
        unit: 'jobs/s',
        value: jobSpread,
        baseline: { label: 'bare workflow + 1 no-op activity', unit: 'wf/s', value: spread(bareRates) },
        sense: 'higher-better',
        notes: 'first intake to last succeeded (DB clock) vs first start to last close (Temporal visibility)',
      }),
      row({
        id: 'throughput.commits-per-job',
        section: 'throughput',
        figure: 'Postgres commits per summarize job (pg_stat_database, approx.)',
        unit: 'commits',
        value: commitSpread,
        baseline: null,
        sense: 'info',
        notes: 'read against the pgbench commit rate below: commit rate / commits per job = a serial ceiling',
      }),
    ],
  };
}

async function runSummarize(
  stack: BenchStack,
  jobs: ReturnType<BenchStack['jobsClient']>,
  tenant: string,
  n: number,
): Promise<{ perSec: number; polls: number }> {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
  await pool(n, SUBMIT_CONCURRENCY, (i) =>
    jobs.submitJob({ tenantId: tenant, type: 'summarize', idempotencyKey: `bench-${tenant}-${i}-${uid()}`, input: { text } }),
  );
  let polls = 0;
  await waitUntil(
    `${n} summarize jobs of ${tenant} to succeed`,
    async () => {
      polls++;
      const r = await stack.pool.query<{ ok: number; bad: number }>(
        `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok,
              count(*) FILTER (WHERE status IN ('dead_lettered', 'cancelled'))::int AS bad
         FROM job_intents WHERE tenant_id = $1`,
        [tenant],
      );
      const c = r.rows[0]!;
      if (c.bad > 0) throw new Error(`${c.bad} summarize jobs of ${tenant} ended ${'dead_lettered/cancelled'}: the product is broken`);
      return c.ok >= n;
    },
    120_000 + n * 1_000,
    100,
  );
  const span = await stack.pool.query<{ s: number }>(
    'SELECT extract(epoch FROM max(finished_at) - min(created_at))::float8 AS s FROM job_intents WHERE tenant_id = $1',
    [tenant],
  );
  return { perSec: n / Math.max(span.rows[0]!.s, 1e-3), polls: polls + 1 };
}

/** Starts n bare workflows and waits until visibility shows them all completed. */
export async function runBare(
  stack: Pick<BenchStack, 'temporal'>,
  taskQueue: string,
  prefix: string,
  n: number,
  completedBefore: number,
): Promise<{ perSec: number }> {
  await pool(n, SUBMIT_CONCURRENCY, (i) =>
    stack.temporal.workflow.start('bareWorkflow', { taskQueue, workflowId: `${prefix}-${i}`, args: [0] }),
  );
  const query = `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`;
  await waitUntil(
    `${n} bare workflows on ${taskQueue} to complete`,
    async () => {
      const { count } = await stack.temporal.workflow.count(query);
      return count >= completedBefore + n;
    },
    120_000 + n * 500,
    100,
  );
  let first = Infinity;
  let last = 0;
  let seen = 0;
  for await (const wf of stack.temporal.workflow.list({ query })) {
    if (!wf.workflowId.startsWith(`${prefix}-`)) continue;
    seen++;
    first = Math.min(first, wf.startTime.getTime());
    last = Math.max(last, wf.closeTime?.getTime() ?? 0);
  }
  if (seen < n) throw new Error(`visibility lists ${seen} of ${n} completed bare workflows`);
  return { perSec: n / Math.max((last - first) / 1000, 1e-3) };
}

async function xactCommits(p: pg.Pool): Promise<number> {
  // Other backends publish their counters at most about once a second.
  await new Promise((r) => setTimeout(r, 1_100));
  const r = await p.query<{ c: string }>('SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = current_database()');
  return Number(r.rows[0]!.c);
}
