// End-to-end throughput, four sides on the same server with the same worker settings, each
// worker in a process of its own: N `summarize` jobs submitted through the client library
// until all succeeded, on the standard path and on the fast path (FAST_PATH_JOB_TYPES, the
// same worker process); N bare workflows (one no-op activity); N twin workflows shaped like
// `summarize` (the same search attributes, summary, details and ID policies at start, two
// activities, two upserts, the same upstream call, no Postgres). Repeats run the sides in
// alternating order (ABCD, DCBA, ...); each ratio is the median of the per-repeat ratios. Around
// every run: CPU seconds per process, Postgres commits / round trips / WAL, upstream calls, and
// for a sample of workflows their history (events and actions).
import type { WorkflowStartOptions } from '@temporalio/client';
import { upsertTenant } from '../../store/tenants.js';
import { historyCost, pgServerCounters, type HistoryCost, type PerJob } from './costs.js';
import { cpuDelta, cpuSnapshot } from './cpu.js';
import { diffPg, snapshotPg, type PgCounters } from './pg-probe.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, pool, row, spread, waitUntil, type BenchRow } from './stats.js';

const SUBMIT_CONCURRENCY = 16;
// `fast`: the same summarize jobs on the fast path (FAST_PATH_JOB_TYPES=summarize), same worker.
type Side = 'summarize' | 'fast' | 'twin' | 'bare';
const SIDES: Side[] = ['summarize', 'fast', 'twin', 'bare'];
const isProduct = (s: Side) => s === 'summarize' || s === 'fast';
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(20);

export interface ThroughputResult {
  rows: BenchRow[];
  summarizePerSec: number | null;
  commitsPerJob: number | null;
  perJob: PerJob | null;
}

interface RunCost {
  perSec: number;
  wallSec: number;
  ids: string[];
  cpu: Record<'api' | 'worker' | 'temporal' | 'postgres', number | null>;
  pg: PgCounters;
  server: { commits: number; temporalCommits: number; walBytes: number };
  upstream: number;
}

/** The options the product's intake gives `workflow.start` (search attributes, summary, details, policies), for the twin. */
export function twinStartOptions(tenant: string, taskQueue: string, workflowId: string, key: string): WorkflowStartOptions {
  return {
    taskQueue,
    workflowId,
    args: [{ key, text: TEXT }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    searchAttributes: { TenantId: [tenant], JobType: ['summarize'], JobState: ['queued'] },
    staticSummary: `summarize ${workflowId}`,
    staticDetails: 'Summarize a text with the provider. Input is stored in Postgres (job_intents), not in this history.',
  } as WorkflowStartOptions;
}

export async function measureThroughput(stack: BenchStack): Promise<ThroughputResult> {
  const n = stack.quick ? 20 : 300;
  const repeats = stack.quick ? 2 : 5;
  const sample = stack.quick ? 3 : 20;
  const productQueue = `bench-tp-${uid()}`;
  const bareQueue = `bench-tp-bare-${uid()}`;
  const [product, bare] = await Promise.all([stack.startWorkerChild('product', productQueue), stack.startWorkerChild('bare', bareQueue)]);
  const jobs = stack.jobsClient(productQueue);
  const fastJobs = stack.jobsClient(productQueue, undefined, new Set(['summarize']));
  const runs: Record<Side, RunCost[]> = { summarize: [], fast: [], twin: [], bare: [] };
  const history: Record<Side, HistoryCost[]> = { summarize: [], fast: [], twin: [], bare: [] };
  const done: Record<Side, number> = { summarize: 0, fast: 0, twin: 0, bare: 0 };
  const pids = await stack.pids();
  try {
    const once = async (side: Side, tag: string, count: number): Promise<RunCost> => {
      const child = isProduct(side) ? product : bare;
      const roots = { api: pids.bench, worker: child.proc.pid, temporal: pids.temporal, postgres: pids.postgres };
      const s0 = await pgServerCounters(stack.pool, stack.temporalDatabases);
      const c0 = await child.fresh();
      const b0 = snapshotPg();
      const sim0 = (await stack.simEffects()).totalApplied;
      const cpu0 = cpuSnapshot(roots, ['api']);
      let out: { perSec: number; wallSec: number; ids: string[]; benchPg: PgCounters };
      if (isProduct(side)) {
        const tenant = `bench-tp-${side}-${tag}-${uid()}`;
        await upsertTenant(stack.pool, tenant, `key-${tenant}`);
        out = await runSummarize(stack, side === 'fast' ? fastJobs : jobs, tenant, count);
      } else {
        out = await runBareSide(stack, side as 'twin' | 'bare', bareQueue, `${side}-${tag}-${uid()}`, count, done[side]);
        done[side] += count;
      }
      const cpu1 = cpuSnapshot(roots, ['api']);
      const c1 = await child.fresh();
      const sim1 = (await stack.simEffects()).totalApplied;
      const benchAll = diffPg(b0, snapshotPg());
      const s1 = await pgServerCounters(stack.pool, stack.temporalDatabases);
      const childPg = diffPg(c0 as PgCounters, c1 as PgCounters);
      const pg: PgCounters = {
        roundTrips: childPg.roundTrips + out.benchPg.roundTrips,
        waitMs: childPg.waitMs + out.benchPg.waitMs,
        commits: childPg.commits + out.benchPg.commits,
        writeCommits: childPg.writeCommits + out.benchPg.writeCommits,
        effectCommits: childPg.effectCommits + out.benchPg.effectCommits,
        effectWaitMs: childPg.effectWaitMs + out.benchPg.effectWaitMs,
      };
      return {
        perSec: out.perSec,
        wallSec: out.wallSec,
        ids: out.ids,
        cpu: cpuDelta(cpu0, cpu1) as RunCost['cpu'],
        pg,
        server: {
          // Minus this process's own transactions (tenant row, polling, the span query, the first
          // counter read) but not the intake's, which are the product's.
          commits: s1.commits - s0.commits - 1 - (benchAll.commits - out.benchPg.commits),
          temporalCommits: s1.temporalCommits - s0.temporalCommits,
          walBytes: s1.walBytes - s0.walBytes,
        },
        upstream: sim1 - sim0,
      };
    };
    // Warm-up: first jobs pay for isolate creation and connection set-up.
    for (const side of SIDES) await once(side, 'warm', Math.min(5, n));
    for (let r = 0; r < repeats; r++) {
      for (const side of alternate(SIDES, r)) {
        const c = await once(side, String(r), n);
        runs[side].push(c);
        history[side].push(await historyCost(stack.temporal, c.ids, sample));
      }
      stack.log(
        `  throughput repeat ${r + 1}/${repeats} (${alternate(SIDES, r).join(', ')}): summarize ${runs.summarize.at(-1)!.perSec.toFixed(1)}/s, fast path ${runs.fast.at(-1)!.perSec.toFixed(1)}/s, twin ${runs.twin.at(-1)!.perSec.toFixed(1)}/s, bare ${runs.bare.at(-1)!.perSec.toFixed(1)}/s`,
      );
    }
  } finally {
    await Promise.all([product.stop(), bare.stop()]);
  }
  return report(stack, n, repeats, runs, history);
}

function report(
  stack: BenchStack,
  n: number,
  repeats: number,
  runs: Record<Side, RunCost[]>,
  history: Record<Side, HistoryCost[]>,
): ThroughputResult {
  const rate = (s: Side) => spread(runs[s].map((c) => c.perSec));
  const per = (s: Side, f: (c: RunCost) => number) => spread(runs[s].map((c) => f(c) / n));
  const cpuPer = (s: Side, k: keyof RunCost['cpu']) => {
    const v = runs[s].map((c) => c.cpu[k]);
    return v.some((x) => x === null) ? null : spread(v.map((x) => ((x as number) * 1000) / n));
  };
  const hist = (s: Side, k: keyof HistoryCost) => spread(history[s].map((h) => h[k]));
  const label = (s: Side) =>
    s === 'bare'
      ? 'bare workflow + 1 no-op activity'
      : s === 'twin'
        ? 'twin: shaped like summarize, no Postgres'
        : 'summarize on the standard path';
  const what = (s: Side) =>
    s === 'summarize' ? 'summarize jobs' : s === 'fast' ? 'summarize jobs on the fast path (local activities)' : 'twin workflows';
  const tpRow = (id: string, a: Side, b: Side, note: string): BenchRow =>
    row({
      id,
      section: 'throughput',
      figure: `${what(a)} end to end (N=${n}, ${SUBMIT_CONCURRENCY} submitters, ${repeats} repeats)`,
      unit: isProduct(a) ? 'jobs/s' : 'wf/s',
      value: rate(a),
      baseline: { label: label(b), unit: isProduct(b) ? 'jobs/s' : 'wf/s', value: rate(b) },
      sense: 'higher-better',
      paired: true,
      notes: note,
      details: { wallSec: runs[a].map((c) => c.wallSec) },
    });
  const rows: BenchRow[] = [
    tpRow(
      'throughput.summarize',
      'summarize',
      'bare',
      'first intake to last succeeded (DB clock) vs first start to last close (visibility); sides alternate ABCD/DCBA',
    ),
    tpRow(
      'throughput.summarize-vs-twin',
      'summarize',
      'twin',
      'our own cost: the same Temporal shape and upstream call without our bookkeeping',
    ),
    tpRow(
      'throughput.twin',
      'twin',
      'bare',
      "the cost of summarize's Temporal shape (its step activity with a heartbeat timeout, two JobState upserts, search attributes, metadata)",
    ),
    tpRow(
      'throughput.fast',
      'fast',
      'bare',
      'FAST_PATH_JOB_TYPES=summarize: gate, step and upserts in one workflow task, no activity task; same worker as summarize',
    ),
    tpRow('throughput.fast-vs-summarize', 'fast', 'summarize', 'what the fast path saves over the standard path, same jobs and worker'),
  ];
  const info = (id: string, figure: string, unit: string, value: BenchRow['value'], notes: string, details?: Record<string, unknown>) =>
    rows.push(row({ id, section: 'per job', figure, unit, value, baseline: null, sense: 'info', notes, ...(details ? { details } : {}) }));
  for (const s of SIDES) {
    const cpu = (['api', 'worker', 'temporal', 'postgres'] as const).map((k) => {
      const v = cpuPer(s, k);
      return `${k} ${v ? v.median.toFixed(2) : '?'} ms`;
    });
    info(
      `perjob.cpu.${s}`,
      `${s}: CPU per job by process (/proc/<pid>/stat) beside wall ${(1000 / rate(s).median).toFixed(1)} ms per job`,
      'ms',
      cpuPer(s, 'worker') ?? null,
      cpu.join(', '),
      { api: cpuPer(s, 'api'), worker: cpuPer(s, 'worker'), temporal: cpuPer(s, 'temporal'), postgres: cpuPer(s, 'postgres') },
    );
    info(
      `perjob.temporal.${s}`,
      `${s}: Temporal actions per job (from ${history[s].length} x sampled histories; heartbeats not counted)`,
      'actions',
      hist(s, 'actions'),
      `history events ${hist(s, 'events').median.toFixed(1)}, activity tasks ${hist(s, 'activityTasks').median.toFixed(1)}, workflow tasks ${hist(s, 'workflowTasks').median.toFixed(1)}`,
      { events: hist(s, 'events'), activityTasks: hist(s, 'activityTasks'), workflowTasks: hist(s, 'workflowTasks') },
    );
  }
  const commits = per('summarize', (c) => c.pg.commits);
  info(
    'throughput.commits-per-job',
    'summarize: Postgres commits per job (every transaction, explicit or one statement, counted at the client by wrapping pg.Client#query)',
    'commits',
    commits,
    `${per('summarize', (c) => c.pg.writeCommits).median.toFixed(1)} of them wrote; pg_stat_database xact_commit says ${per('summarize', (c) => c.server.commits).median.toFixed(1)} (backends publish it up to 10 s late, so it runs low in short runs)`,
    { writeCommits: per('summarize', (c) => c.pg.writeCommits), pgStatDatabase: per('summarize', (c) => c.server.commits) },
  );
  info(
    'throughput.fast-commits-per-job',
    'summarize on the fast path: Postgres commits per job (counted at the client, as above)',
    'commits',
    per('fast', (c) => c.pg.commits),
    `${per('fast', (c) => c.pg.writeCommits).median.toFixed(1)} of them wrote; round trips ${per('fast', (c) => c.pg.roundTrips).median.toFixed(1)}; upstream calls ${per('fast', (c) => c.upstream).median.toFixed(2)}`,
  );
  info(
    'perjob.round-trips',
    'summarize: Postgres round trips per job (intake in this process + worker child, counted by wrapping pg.Client#query)',
    'round trips',
    per('summarize', (c) => c.pg.roundTrips),
    `time waiting on Postgres ${per('summarize', (c) => c.pg.waitMs).median.toFixed(2)} ms per job (summed over statements)`,
  );
  info(
    'perjob.wal',
    'summarize: WAL bytes per job (pg_current_wal_lsn diff, whole cluster)',
    'bytes',
    per('summarize', (c) => c.server.walBytes),
    stack.temporalKind === 'production'
      ? `includes temporal-server's own writes; twin ${per('twin', (c) => c.server.walBytes).median.toFixed(0)} B/wf, bare ${per('bare', (c) => c.server.walBytes).median.toFixed(0)} B/wf; temporal-server commits per job ${per('summarize', (c) => c.server.temporalCommits).median.toFixed(1)}`
      : 'the dev server writes SQLite, not this WAL',
  );
  info(
    'perjob.upstream',
    'summarize: upstream calls per job (effects the simulator applied)',
    'calls',
    per('summarize', (c) => c.upstream),
    '',
  );
  const perJob: PerJob = {
    jobsPerSec: rate('summarize').median,
    pgCommits: commits.median,
    temporalPgCommits: per('summarize', (c) => c.server.temporalCommits).median,
    roundTrips: per('summarize', (c) => c.pg.roundTrips).median,
    walBytes: per('summarize', (c) => c.server.walBytes).median,
    temporalActions: hist('summarize', 'actions').median,
    historyEvents: hist('summarize', 'events').median,
    upstreamCalls: per('summarize', (c) => c.upstream).median,
    cpuSec: {
      worker: cpuPer('summarize', 'worker')?.median ?? null,
      api: cpuPer('summarize', 'api')?.median ?? null,
      temporal: cpuPer('summarize', 'temporal')?.median ?? null,
      postgres: cpuPer('summarize', 'postgres')?.median ?? null,
    },
  };
  for (const k of Object.keys(perJob.cpuSec) as Array<keyof PerJob['cpuSec']>) {
    const v = perJob.cpuSec[k];
    perJob.cpuSec[k] = v === null ? null : v / 1000;
  }
  return { rows, summarizePerSec: rate('summarize').median, commitsPerJob: commits.median, perJob };
}

export async function runSummarize(
  stack: BenchStack,
  jobs: ReturnType<BenchStack['jobsClient']>,
  tenant: string,
  n: number,
): Promise<{ perSec: number; wallSec: number; ids: string[]; benchPg: PgCounters }> {
  const benchPg0 = snapshotPg();
  const ids = await pool(n, SUBMIT_CONCURRENCY, async (i) => {
    const r = await jobs.submitJob({
      tenantId: tenant,
      type: 'summarize',
      idempotencyKey: `bench-${tenant}-${i}-${uid()}`,
      input: { text: TEXT },
    });
    return r.jobId;
  });
  // The intake's own round trips: nothing else in this process talks to Postgres meanwhile.
  const benchPg = diffPg(benchPg0, snapshotPg());
  const { wallSec } = await tenantJobsDone(stack, tenant, n, 'summarize');
  return { perSec: n / wallSec, wallSec, ids, benchPg };
}

/**
 * Waits until `n` jobs of `tenant` succeeded (any dead-lettered or cancelled one is an error:
 * the product is broken) and returns first intake to last success, by the database clock.
 */
export async function tenantJobsDone(
  stack: Pick<BenchStack, 'pool'>,
  tenant: string,
  n: number,
  what: string,
  context: () => string = () => '',
): Promise<{ perSec: number; wallSec: number }> {
  await waitUntil(
    `${n} ${what} jobs of ${tenant} to succeed`,
    async () => {
      const r = await stack.pool.query<{ ok: number; bad: number }>(
        `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok,
              count(*) FILTER (WHERE status IN ('dead_lettered', 'cancelled'))::int AS bad
         FROM job_intents WHERE tenant_id = $1`,
        [tenant],
      );
      const c = r.rows[0]!;
      if (c.bad > 0)
        throw new Error(`${c.bad} ${what} jobs of ${tenant} ended dead_lettered/cancelled: the product is broken ${context()}`);
      return c.ok >= n;
    },
    120_000 + n * 1_000,
    100,
  );
  const span = await stack.pool.query<{ s: number }>(
    'SELECT extract(epoch FROM max(finished_at) - min(created_at))::float8 AS s FROM job_intents WHERE tenant_id = $1',
    [tenant],
  );
  const wallSec = Math.max(span.rows[0]!.s, 1e-3);
  return { perSec: n / wallSec, wallSec };
}

/** Starts n bare or twin workflows and waits until visibility shows them all completed. */
export async function runBare(
  stack: Pick<BenchStack, 'temporal'>,
  taskQueue: string,
  prefix: string,
  n: number,
  completedBefore: number,
  workflowType: 'bareWorkflow' | 'twinWorkflow' = 'bareWorkflow',
  startOptions?: (i: number) => WorkflowStartOptions,
): Promise<{ perSec: number; wallSec: number; ids: string[] }> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  await pool(n, SUBMIT_CONCURRENCY, (i) =>
    stack.temporal.workflow.start(workflowType, startOptions ? startOptions(i) : { taskQueue, workflowId: ids[i]!, args: [0] }),
  );
  const query = `TaskQueue = '${taskQueue}' AND WorkflowType = '${workflowType}' AND ExecutionStatus = 'Completed'`;
  await waitUntil(
    `${n} ${workflowType} runs on ${taskQueue} to complete`,
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
  if (seen < n) throw new Error(`visibility lists ${seen} of ${n} completed ${workflowType} runs`);
  const wallSec = Math.max((last - first) / 1000, 1e-3);
  return { perSec: n / wallSec, wallSec, ids };
}

async function runBareSide(
  stack: BenchStack,
  side: 'twin' | 'bare',
  queue: string,
  prefix: string,
  n: number,
  before: number,
): Promise<{ perSec: number; wallSec: number; ids: string[]; benchPg: PgCounters }> {
  const benchPg0 = snapshotPg();
  const tenant = 'bench-twin';
  const r =
    side === 'bare'
      ? await runBare(stack, queue, prefix, n, before)
      : await runBare(stack, queue, prefix, n, before, 'twinWorkflow', (i) => ({
          ...twinStartOptions(tenant, queue, `${prefix}-${i}`, `twin-${prefix}-${i}`),
          args: [{ providerUrl: stack.sim.url, key: `twin-${prefix}-${i}`, text: TEXT }],
        }));
  return { ...r, benchPg: diffPg(benchPg0, snapshotPg()) };
}
