/**
 * `npm run bench`: the benchmark suite. One process tree against one local stack it starts
 * itself (or the Postgres / Temporal named by DATABASE_URL / TEMPORAL_ADDRESS). Every figure is
 * printed beside its baseline as a ratio, with the raw numbers and the spread over repeats.
 *
 *   npm run bench                      full run; writes bench/results.json and the README table
 *   npm run bench -- --quick           tiny sizes, same code paths (CI smoke test); writes nothing
 *   npm run bench -- --out FILE        also (or instead) write the results to FILE
 *   npm run bench -- --only a,b        only these sections: throughput, intake, effects, replay,
 *                                      growth, memory, machine
 *
 * It exits non-zero only when a measurement fails with an error (broken code), never on timing.
 */
import os from 'node:os';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureEffectCost } from './bench/effects-cost.js';
import { measureIntake } from './bench/intake.js';
import { measureMachineLimits } from './bench/machine-limits.js';
import { markdownTable, terminalTable, updateReadme, type BenchResults } from './bench/report.js';
import { measureReplay } from './bench/replay.js';
import { startStack } from './bench/stack.js';
import { row, spread, type BenchRow } from './bench/stats.js';
import { measureTableGrowth } from './bench/table-growth.js';
import { measureThroughput } from './bench/throughput.js';
import { measureWorkerMemory } from './bench/worker-memory.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SECTIONS = ['throughput', 'intake', 'effects', 'replay', 'growth', 'memory', 'machine'] as const;
type Section = (typeof SECTIONS)[number];

function parseArgs(argv: string[]): { quick: boolean; out: string | null; only: Set<Section> } {
  const quick = argv.includes('--quick');
  const outIdx = argv.indexOf('--out');
  const onlyIdx = argv.indexOf('--only');
  const only = new Set<Section>(onlyIdx >= 0 ? ((argv[onlyIdx + 1] ?? '').split(',').filter(Boolean) as Section[]) : SECTIONS);
  for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`--only: unknown section "${s}" (sections: ${SECTIONS.join(', ')})`);
  const out = outIdx >= 0 ? path.resolve(argv[outIdx + 1] ?? '') : quick || onlyIdx >= 0 ? null : path.join(ROOT, 'bench', 'results.json');
  return { quick, out, only };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const loadStart = os.loadavg();
  const log = (m: string) => console.log(m);
  log(
    `durable-jobs bench${args.quick ? ' (quick)' : ''}: ${os.cpus().length} cores, load average ${loadStart.map((l) => l.toFixed(2)).join(' ')}`,
  );
  const stack = await startStack({ quick: args.quick, log });
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
      return t.rows;
    });
    await section('intake', () => measureIntake(stack));
    await section('effects', () => measureEffectCost(stack));
    await section('replay', () => measureReplay(stack));
    await section('growth', () => measureTableGrowth(stack));
    await section('memory', () => measureWorkerMemory(stack));
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

  const results: BenchResults = {
    meta: {
      startedAt: new Date(started).toISOString(),
      durationSec: (Date.now() - started) / 1000,
      mode: args.quick ? 'quick' : 'full',
      cores: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      loadAverage: { start: loadStart, end: os.loadavg() },
      node: process.version,
      postgres,
      temporal: stack.embeddedTemporal
        ? `Temporal dev server ${stack.cliPath ? '(CLI) ' : ''}with a tuned SQLite file`
        : `Temporal at ${stack.temporalAddress}`,
    },
    rows,
    errors,
  };
  console.log(`\n${terminalTable(results)}`);
  if (args.out) {
    await fs.mkdir(path.dirname(args.out), { recursive: true });
    await fs.writeFile(args.out, `${JSON.stringify(results, null, 2)}\n`);
    log(`\nresults written to ${path.relative(process.cwd(), args.out) || args.out}`);
    if (!args.quick && args.out === path.join(ROOT, 'bench', 'results.json') && errors.length === 0) {
      if (await updateReadme(path.join(ROOT, 'bench', 'README.md'), markdownTable(results))) log('bench/README.md table updated');
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
