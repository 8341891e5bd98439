/**
 * `npm run bench`: the benchmark suite. One process tree against one local stack it starts
 * itself (or the Postgres / Temporal named by DATABASE_URL / TEMPORAL_ADDRESS). Every figure is
 * printed beside its baseline as a ratio, with the raw numbers and the spread over repeats.
 *
 *   npm run bench                      full run; writes bench/results.json and the README table
 *   npm run bench -- --quick           tiny sizes, same code paths (CI smoke test); writes nothing
 *   npm run bench -- --out FILE        also (or instead) write the results to FILE
 *   npm run bench -- --only a,b        only these sections: throughput, codec, intake, abuse, effects,
 *                                      replay, growth, memory, slots, fairness, machine, example (a
 *                                      team's type from examples/acme-service, installed from the tarball),
 *                                      tracing (summarize with traces on ÷ off)
 *   npm run bench -- --temporal production   the same sections on temporal-server on Postgres
 *                                      (the production shape) instead of the CLI dev server
 *   npm run bench -- --allow-busy      write a full run even though the machine was busy at its
 *                                      start (1-minute load average above 1): marked `busy`
 *
 * A full run (one that writes bench/results*.json) refuses to start on a busy machine: its
 * figures would be the other load's, not ours (issue 40, "measured so that it can be believed").
 *
 * It exits non-zero only when a measurement fails with an error (broken code), never on timing.
 */
import os from 'node:os';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureCodec } from './bench/codec.js';
import { measureEffectCost } from './bench/effects-cost.js';
import { measureExampleType } from './bench/example-type.js';
import { measureSlots } from './bench/slots.js';
import { measureFairness } from './bench/fairness.js';
import { measureIntake } from './bench/intake.js';
import { measureSlowBodies } from './bench/slow-bodies.js';
import { measureMachineLimits } from './bench/machine-limits.js';
import { capacityTable, type PerJob } from './bench/costs.js';
import { installPgProbe } from './bench/pg-probe.js';
import { conditionsText, markdownTable, terminalTable, updateReadme, type BenchResults } from './bench/report.js';
import { measureReplay } from './bench/replay.js';
import { startStack, type TemporalKind } from './bench/stack.js';
import { row, spread, type BenchRow } from './bench/stats.js';
import { measureTableGrowth } from './bench/table-growth.js';
import { measureThroughput } from './bench/throughput.js';
import { measureTracing } from './bench/tracing.js';
import { measureWorkerMemory } from './bench/worker-memory.js';
import { MMAP_THRESHOLD_ENV, workerProcessEnv } from '../lib/worker-allocator.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SECTIONS = [
  'throughput',
  'codec',
  'intake',
  'abuse',
  'effects',
  'replay',
  'growth',
  'memory',
  'slots',
  'fairness',
  'machine',
  'example',
  'tracing',
] as const;
type Section = (typeof SECTIONS)[number];

/** The 1-minute load average above which a full run is not written (unless `--allow-busy`, which marks it). */
const BUSY_LOAD = 1;

function parseArgs(argv: string[]): { quick: boolean; out: string | null; only: Set<Section>; temporal: TemporalKind; allowBusy: boolean } {
  const quick = argv.includes('--quick');
  const allowBusy = argv.includes('--allow-busy');
  const tIdx = argv.indexOf('--temporal');
  const temporal = (tIdx >= 0 ? argv[tIdx + 1] : 'dev') as TemporalKind;
  if (temporal !== 'dev' && temporal !== 'production') throw new Error(`--temporal: "dev" or "production", got "${temporal}"`);
  const outIdx = argv.indexOf('--out');
  const onlyIdx = argv.indexOf('--only');
  // `--quick` (the suite's smoke test) leaves out `example`: it packs and installs the package
  // (a minute or two of build and npm install), which the smoke test need not repeat.
  const all = quick ? SECTIONS.filter((s) => s !== 'example') : SECTIONS;
  const only = new Set<Section>(onlyIdx >= 0 ? ((argv[onlyIdx + 1] ?? '').split(',').filter(Boolean) as Section[]) : all);
  for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`--only: unknown section "${s}" (sections: ${SECTIONS.join(', ')})`);
  const defaultOut = path.join(ROOT, 'bench', temporal === 'production' ? 'results-production.json' : 'results.json');
  const out = outIdx >= 0 ? path.resolve(argv[outIdx + 1] ?? '') : quick || onlyIdx >= 0 ? null : defaultOut;
  return { quick, out, only, temporal, allowBusy };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  installPgProbe(); // counts this process's round trips (the intake's); workers run in children with their own
  const started = Date.now();
  const loadStart = os.loadavg();
  const log = (m: string) => console.log(m);
  log(
    `durable-jobs bench${args.quick ? ' (quick)' : ''}: ${os.cpus().length} cores, load average ${loadStart.map((l) => l.toFixed(2)).join(' ')}`,
  );
  const busy = !args.quick && args.out !== null && loadStart[0]! > BUSY_LOAD;
  if (busy && !args.allowBusy) {
    console.error(
      `bench: the load average is ${loadStart[0]!.toFixed(2)} (above ${BUSY_LOAD}): a full run on a busy machine measures the other load. ` +
        'Wait for a quiet machine, or pass --allow-busy to write it marked busy.',
    );
    return 2;
  }
  if (busy) log(`load average above ${BUSY_LOAD}: --allow-busy, the results are marked busy`);
  const stack = await startStack({ quick: args.quick, log, temporal: args.temporal });
  let stopping = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${sig}: stopping the stack`);
    void stack.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const rows: BenchRow[] = [];
  const errors: BenchResults['errors'] = [];
  let summarizePerSec: number | null = null;
  let commitsPerJob: number | null = null;
  let pgbenchTps: number | null = null;
  let perJob: PerJob | null = null;
  const section = async (name: Section, fn: () => Promise<BenchRow[]>) => {
    if (!args.only.has(name)) return;
    const t0 = Date.now();
    log(`${name}…`);
    try {
      rows.push(...(await fn()));
    } catch (err) {
      errors.push({ section: name, message: (err as Error).stack ?? String(err) });
      log(`  ${name} FAILED: ${(err as Error).message}`);
    }
    log(`  ${name} done in ${Math.round((Date.now() - t0) / 1000)} s`);
  };
  let postgres = '';
  try {
    postgres = `Postgres ${(await stack.pool.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version} (${stack.embeddedPg ? 'embedded, durable settings' : 'DATABASE_URL'})`;
    await section('throughput', async () => {
      const t = await measureThroughput(stack);
      summarizePerSec = t.summarizePerSec;
      commitsPerJob = t.commitsPerJob;
      perJob = t.perJob;
      return t.rows;
    });
    await section('codec', () => measureCodec(stack));
    await section('intake', () => measureIntake(stack));
    await section('abuse', () => measureSlowBodies(stack));
    await section('effects', () => measureEffectCost(stack));
    await section('replay', () => measureReplay(stack));
    await section('growth', () => measureTableGrowth(stack));
    await section('memory', () => measureWorkerMemory(stack));
    await section('slots', () => measureSlots(stack));
    await section('fairness', () => measureFairness(stack));
    await section('example', () => measureExampleType(stack));
    await section('tracing', () => measureTracing(stack));
    await section('machine', async () => {
      const m = await measureMachineLimits(stack);
      pgbenchTps = m.pgbenchTps;
      return m.rows;
    });
    const derived = ceilingRow(summarizePerSec, commitsPerJob, pgbenchTps);
    if (derived) rows.push(derived);
  } finally {
    await stack.stop();
  }

  const poolMax = 10; // lib/db.ts createPool's default, which the API and the worker use
  const results: BenchResults = {
    capacity: perJob ? capacityTable(perJob, poolMax, stack.temporalKind === 'production' ? 'production-shape' : 'dev') : null,
    meta: {
      startedAt: new Date(started).toISOString(),
      durationSec: (Date.now() - started) / 1000,
      mode: args.quick ? 'quick' : 'full',
      cores: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      loadAverage: { start: loadStart, end: os.loadavg() },
      ...(busy ? { busy: true } : {}),
      node: process.version,
      postgres,
      temporal: stack.temporalDescription,
      temporalKind: stack.temporalKind,
      settings: {
        argv: process.argv.slice(2).join(' '),
        sections: [...args.only].join(', '),
        activitySlots: 50,
        workerAllocator: `every worker child (product and baselines) started with ${MMAP_THRESHOLD_ENV}=${workerProcessEnv(process.env)[MMAP_THRESHOLD_ENV] ?? '(as GLIBC_TUNABLES sets it)'}, as npm run worker starts one`,
        concurrencyCaps: 'raised out of the way for throughput and memory (replay measures a cap)',
        postgres: stack.embeddedPg ? 'fsync on, synchronous_commit on' : 'as DATABASE_URL runs it',
      },
    },
    rows,
    errors,
  };
  console.log(`\n${terminalTable(results)}`);
  if (args.out) {
    await fs.mkdir(path.dirname(args.out), { recursive: true });
    await fs.writeFile(args.out, `${JSON.stringify(results, null, 2)}\n`);
    log(`\nresults written to ${path.relative(process.cwd(), args.out) || args.out}`);
    const readmeRun = !args.quick && args.only.size === SECTIONS.length && errors.length === 0;
    if (readmeRun && args.out === path.join(ROOT, 'bench', 'results.json')) {
      const readme = path.join(ROOT, 'bench', 'README.md');
      if (await updateReadme(readme, markdownTable(results))) log('bench/README.md table updated');
      await updateReadme(readme, conditionsText(results), 'bench-conditions');
      if (results.capacity) await updateReadme(readme, results.capacity, 'bench-capacity');
    } else if (readmeRun && args.out === path.join(ROOT, 'bench', 'results-production.json')) {
      const readme = path.join(ROOT, 'bench', 'README.md');
      if (await updateReadme(readme, `${conditionsText(results)}\n\n${markdownTable(results)}`, 'bench-production'))
        log('bench/README.md production table updated');
      if (results.capacity) await updateReadme(readme, results.capacity, 'bench-capacity-production');
    }
  }
  return errors.length > 0 ? 1 : 0;
}

/** summarize throughput against what Postgres alone would allow, one commit after another. */
function ceilingRow(jobsPerSec: number | null, commitsPerJob: number | null, tps: number | null): BenchRow | null {
  if (jobsPerSec === null || commitsPerJob === null || tps === null || commitsPerJob <= 0) return null;
  const ceiling = tps / commitsPerJob;
  return row({
    id: 'machine.summarize-vs-commit-ceiling',
    section: 'machine limits',
    figure: 'summarize throughput vs serial commit ceiling (pgbench rate / commits per job)',
    unit: 'jobs/s',
    value: spread([jobsPerSec]),
    baseline: {
      label: `${tps.toFixed(0)} commits/s / ${commitsPerJob.toFixed(1)} commits per job`,
      unit: 'jobs/s',
      value: spread([ceiling]),
    },
    sense: 'info',
    notes: 'well below 1x: Postgres commits are not what limits throughput; above 1x: concurrent jobs share WAL flushes (group commit)',
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`bench failed: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
