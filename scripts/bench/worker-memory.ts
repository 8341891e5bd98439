// Worker memory (RSS) with N jobs running at once. A product worker in a child process, with
// N activity slots and the concurrency caps raised, runs N summarize jobs whose upstream call
// the simulator holds (`{"path": "/v1/summaries", "times": N, "status": 200, "delayMs": hold}`),
// so all N are inside their activity at the same time. The baseline is the bare worker with N
// bare workflows whose one activity waits the same time; beside it the twin (summarize's Temporal
// shape, its step holding the same upstream call, no Postgres), so product ÷ twin is our own
// memory and twin ÷ bare the engine's with an HTTP call in flight. RSS comes from /proc/<pid>/status.
import { readFile } from 'node:fs/promises';
import { upsertTenant } from '../../store/tenants.js';
import { RAISED_LIMITS, uid, type BenchStack } from './stack.js';
import { pool, row, sleep, spread, waitUntil, type BenchRow } from './stats.js';
import { startChild, type Child } from './child.js';
import { twinStartOptions } from './throughput.js';
import { createJobsClient } from '../../client/index.js';
import { defaultJobRegistry } from '../../jobs/index.js';
interface MemRun {
  idleMb: number;
  loadedMb: number;
  concurrent: number;
}

export async function measureWorkerMemory(stack: BenchStack): Promise<BenchRow[]> {
  if (process.platform !== 'linux')
    return [
      {
        id: 'memory.rss',
        section: 'worker memory',
        figure: 'worker RSS',
        unit: 'MB',
        value: null,
        baseline: null,
        ratio: null,
        sense: 'info',
        skipped: 'needs /proc (Linux)',
      },
    ];
  const n = stack.quick ? 50 : 1_000;
  const holdMs = stack.quick ? 8_000 : 60_000;
  const repeats = stack.quick ? 1 : 3;
  const product: MemRun[] = [];
  const bare: MemRun[] = [];
  const twin: MemRun[] = [];
  for (let r = 0; r < repeats; r++) {
    // Alternate the order (ABC, then CBA); every side holds its activities equally long.
    const sides = [
      async () => product.push(await productRun(stack, n, holdMs)),
      async () => twin.push(await twinRun(stack, n, holdMs)),
      async () => bare.push(await bareRun(stack, n, holdMs)),
    ];
    for (const side of r % 2 === 0 ? sides : sides.reverse()) await side();
    const say = (m: MemRun) => `${m.loadedMb.toFixed(0)} MB at ${m.concurrent} (idle ${m.idleMb.toFixed(0)})`;
    stack.log(`  memory repeat ${r + 1}/${repeats}: product ${say(product.at(-1)!)}, twin ${say(twin.at(-1)!)}, bare ${say(bare.at(-1)!)}`);
  }
  const perJob = (runs: MemRun[]) => spread(runs.map((x) => ((x.loadedMb - x.idleMb) * 1024) / Math.max(x.concurrent, 1)));
  const concurrency = {
    product: product.map((x) => x.concurrent),
    twin: twin.map((x) => x.concurrent),
    bare: bare.map((x) => x.concurrent),
  };
  const all = [...concurrency.product, ...concurrency.twin, ...concurrency.bare];
  const note = all.some((c) => c < n)
    ? `only ${Math.min(...all)} of ${n} were in flight at once in some repeat (slow machine): see details`
    : `all ${n} in flight at once`;
  return [
    row({
      id: 'memory.rss',
      section: 'worker memory',
      figure: `worker RSS with ${n} summarize jobs running at once`,
      unit: 'MB',
      value: spread(product.map((x) => x.loadedMb)),
      baseline: { label: `bare worker with ${n} activities in flight`, unit: 'MB', value: spread(bare.map((x) => x.loadedMb)) },
      sense: 'lower-better',
      paired: true,
      notes: note,
      details: {
        idleMb: {
          product: spread(product.map((x) => x.idleMb)),
          twin: spread(twin.map((x) => x.idleMb)),
          bare: spread(bare.map((x) => x.idleMb)),
        },
        concurrency,
      },
    }),
    row({
      id: 'memory.per-job',
      section: 'worker memory',
      figure: 'RSS per running job above the idle worker',
      unit: 'KB',
      value: perJob(product),
      baseline: { label: 'bare: per activity in flight', unit: 'KB', value: perJob(bare) },
      sense: 'lower-better',
    }),
    row({
      id: 'memory.rss-twin',
      section: 'worker memory',
      figure: `worker RSS with ${n} summarize jobs running at once`,
      unit: 'MB',
      value: spread(product.map((x) => x.loadedMb)),
      baseline: {
        label: `twin worker with ${n} twin workflows in flight, each holding the same upstream call`,
        unit: 'MB',
        value: spread(twin.map((x) => x.loadedMb)),
      },
      sense: 'lower-better',
      paired: true,
      notes: `our own memory: the same Temporal shape and held HTTP call without our bookkeeping; twin per job ${perJob(twin).median.toFixed(0)} KB`,
    }),
  ];
}

/** One side of a memory run: how its n workflows start, how many are in flight, when all are done. */
interface HeldSide {
  child: Child;
  /** The simulator holds the first n upstream calls (the product and the twin call it; the bare side does not). */
  holdsUpstream: boolean;
  start(i: number): Promise<unknown>;
  /** How many are inside their activity at once: counted at the simulator, or by the bare child. */
  peakInFlight(): Promise<number>;
  what: string;
  done(): Promise<boolean>;
  doneTimeoutMs: number;
}

/** Idle RSS, then n held at once (or the first holds about to end: measured either way), then the peak RSS there. */
async function heldRun(stack: BenchStack, n: number, holdMs: number, side: HeldSide): Promise<MemRun> {
  const idleMb = await idleRss(side.child);
  if (side.holdsUpstream) {
    await stack.simReset();
    await stack.simFault({ path: '/v1/summaries', times: n, status: 200, delayMs: holdMs });
  }
  const sampler = rssSampler(side.child);
  await pool(n, 16, (i) => side.start(i));
  const deadline = Date.now() + holdMs * 0.8;
  let concurrent = 0;
  while (Date.now() < deadline) {
    concurrent = await side.peakInFlight();
    if (concurrent >= n) break;
    await sleep(250);
  }
  sampler.reset();
  await sleep(2_000); // a few samples at the plateau
  const loadedMb = sampler.max();
  sampler.stop();
  await waitUntil(side.what, side.done, side.doneTimeoutMs, 500);
  return { idleMb, loadedMb, concurrent };
}

const atSimulator = (stack: BenchStack) => async () => (await stack.simEffects()).peakInFlight;

function workflowsCompleted(stack: BenchStack, queue: string, n: number): () => Promise<boolean> {
  return async () => (await stack.temporal.workflow.count(`TaskQueue = '${queue}' AND ExecutionStatus = 'Completed'`)).count >= n;
}

async function productRun(stack: BenchStack, n: number, holdMs: number): Promise<MemRun> {
  const queue = `bench-mem-${uid()}`;
  const tenant = `bench-mem-${uid()}`;
  await upsertTenant(stack.pool, tenant, `key-${tenant}`);
  const child = await startChild(stack, {
    kind: 'product',
    temporalAddress: stack.temporalAddress,
    namespace: stack.namespace,
    taskQueue: queue,
    bundlePath: await stack.bundleFile('product'),
    activitySlots: n + 50,
    databaseUrl: stack.databaseUrl,
    providerUrl: stack.sim.url,
    limits: RAISED_LIMITS,
  });
  // The call's timeout past the hold: with the default 15 s a held call gives up client-side
  // while the simulator still counts it in flight, so fewer jobs than counted would be inside
  // their activity when the RSS is read.
  const jobs = createJobsClient({
    jobs: defaultJobRegistry,
    pool: stack.pool,
    temporal: stack.temporal,
    taskQueue: queue,
    budgets: { summarize: { upstreamTimeoutMs: heldCallTimeoutMs(holdMs) } },
  });
  try {
    return await heldRun(stack, n, holdMs, {
      child,
      holdsUpstream: true,
      start: (i) =>
        jobs.submitJob({ tenantId: tenant, type: 'summarize', idempotencyKey: `bench-mem-${tenant}-${i}`, input: { text: `memory ${i}` } }),
      peakInFlight: atSimulator(stack),
      what: `${n} held summarize jobs to succeed`,
      done: async () => {
        const r = await stack.pool.query<{ ok: number; bad: number }>(
          `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok, count(*) FILTER (WHERE status IN ('dead_lettered', 'cancelled'))::int AS bad
           FROM job_intents WHERE tenant_id = $1`,
          [tenant],
        );
        if (r.rows[0]!.bad > 0) throw new Error(`${r.rows[0]!.bad} held summarize jobs failed: the product is broken`);
        return r.rows[0]!.ok >= n;
      },
      doneTimeoutMs: holdMs + 180_000 + n * 200,
    });
  } finally {
    await jobs.close();
    await child.stop();
  }
}

async function bareRun(stack: BenchStack, n: number, holdMs: number): Promise<MemRun> {
  const queue = `bench-mem-bare-${uid()}`;
  const child = await startChild(stack, {
    kind: 'bare',
    temporalAddress: stack.temporalAddress,
    namespace: stack.namespace,
    taskQueue: queue,
    bundlePath: await stack.bundleFile('bare'),
    activitySlots: n + 50,
  });
  try {
    return await heldRun(stack, n, holdMs, {
      child,
      holdsUpstream: false,
      start: (i) => stack.temporal.workflow.start('bareWorkflow', { taskQueue: queue, workflowId: `${queue}-${i}`, args: [holdMs] }),
      peakInFlight: async () => child.counter.peak,
      what: `${n} bare workflows to complete`,
      done: workflowsCompleted(stack, queue, n),
      doneTimeoutMs: holdMs + 180_000,
    });
  } finally {
    await child.stop();
  }
}

/** The twin (scripts/bench/bare-workflows.ts): summarize's Temporal shape, its step holding the same upstream call, no Postgres. */
async function twinRun(stack: BenchStack, n: number, holdMs: number): Promise<MemRun> {
  const queue = `bench-mem-twin-${uid()}`;
  const tenant = `bench-mem-twin-${uid()}`;
  const child = await startChild(stack, {
    kind: 'bare',
    temporalAddress: stack.temporalAddress,
    namespace: stack.namespace,
    taskQueue: queue,
    bundlePath: await stack.bundleFile('bare'),
    activitySlots: n + 50,
  });
  try {
    return await heldRun(stack, n, holdMs, {
      child,
      holdsUpstream: true,
      start: (i) => {
        const id = `${queue}-${i}`;
        return stack.temporal.workflow.start('twinWorkflow', {
          ...twinStartOptions(tenant, queue, id, id),
          args: [{ providerUrl: stack.sim.url, key: id, text: `memory ${i}`, timeoutMs: heldCallTimeoutMs(holdMs) }],
        });
      },
      peakInFlight: atSimulator(stack),
      what: `${n} twin workflows to complete`,
      done: workflowsCompleted(stack, queue, n),
      doneTimeoutMs: holdMs + 180_000,
    });
  } finally {
    await child.stop();
  }
}

/** A held call's timeout: the hold, the time to submit the rest, and a margin. */
const heldCallTimeoutMs = (holdMs: number): number => holdMs + 120_000;

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

/** RSS of the started, polling, not yet busy worker (median of a few samples). */
async function idleRss(child: Child): Promise<number> {
  await sleep(2_000);
  const s: number[] = [];
  for (let i = 0; i < 5; i++) {
    s.push(await rssMb(child.proc.pid!));
    await sleep(200);
  }
  return spread(s).median;
}

function rssSampler(child: Child): { max(): number; reset(): void; stop(): void } {
  let peak = 0;
  const t = setInterval(() => {
    rssMb(child.proc.pid!).then(
      (mb) => {
        peak = Math.max(peak, mb);
      },
      () => undefined,
    );
  }, 200);
  return {
    max: () => peak,
    reset: () => {
      peak = 0;
    },
    stop: () => clearInterval(t),
  };
}
