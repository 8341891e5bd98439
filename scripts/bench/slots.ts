// Concurrency-slot acquisitions per second with 3 worker-like processes ÷ with 1: the slot
// statements take rows with FOR UPDATE SKIP LOCKED, no lock per job type, so processes of one
// job type must not queue behind each other. Each process (scripts/bench/slot-child.ts) runs
// the same number of acquirers; every acquirer of every process shares the job type's scope
// and the total scope. The sides run interleaved, in alternating order, 5 repeats.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { BenchStack } from './stack.js';
import { uid } from './stack.js';
import { alternate, row, spread, type BenchRow } from './stats.js';
import { cpuDelta, cpuSnapshot } from './cpu.js';
import type { SlotChildSettings } from './slot-child.js';

const CHILD = fileURLToPath(new URL('./slot-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Proc {
  ready: Promise<void>;
  done: Promise<{ acquired: number; waited: number; cpuSec: number }>;
  go(): void;
}

function startSlotChild(settings: SlotChildSettings): Proc {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(settings)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const kill = () => proc.kill('SIGKILL');
  process.once('exit', kill);
  let err = '';
  proc.stderr!.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2_000)));
  let buf = '';
  let onReady!: () => void;
  let onDone!: (r: { acquired: number; waited: number; cpuSec: number }) => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const done = new Promise<{ acquired: number; waited: number; cpuSec: number }>((resolve, reject) => {
    onDone = resolve;
    proc.once('exit', (code) => {
      process.off('exit', kill);
      if (code !== 0) reject(new Error(`slot child exited ${code}: ${err}`));
    });
  });
  proc.stdout!.on('data', (b: Buffer) => {
    buf += b.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line === 'READY') onReady();
      else if (line.startsWith('{')) onDone(JSON.parse(line) as { acquired: number; waited: number; cpuSec: number });
    }
  });
  return { ready, done, go: () => proc.stdin!.write('GO\n') };
}

/** Acquisitions per second of `processes` processes started together, and the cores Postgres and they kept busy. */
async function rate(
  stack: BenchStack,
  processes: number,
  loops: number,
  durationMs: number,
  jobType: string,
): Promise<{ perSec: number; cores: number | null }> {
  const run = uid();
  const procs = Array.from({ length: processes }, (_, p) =>
    startSlotChild({
      databaseUrl: stack.databaseUrl,
      jobType,
      tenantPrefix: `slots-${run}-${p}`,
      loops,
      durationMs,
      caps: { perTenant: 4, global: 1_000, total: 1_000 },
    }),
  );
  await Promise.all(procs.map((p) => p.ready));
  const pids = await stack.pids();
  const before = cpuSnapshot({ postgres: pids.postgres });
  const t0 = Date.now();
  for (const p of procs) p.go();
  const results = await Promise.all(procs.map((p) => p.done));
  const pgCpu = cpuDelta(before, cpuSnapshot({ postgres: pids.postgres })).postgres ?? null;
  const busy = pgCpu === null ? null : (pgCpu + results.reduce((s, r) => s + r.cpuSec, 0)) / ((Date.now() - t0) / 1000);
  const waited = results.reduce((s, r) => s + r.waited, 0);
  if (waited > 0) throw new Error(`slot acquirers found no free slot ${waited} times: the caps were meant to be out of the way`);
  return { perSec: results.reduce((s, r) => s + r.acquired, 0) / (durationMs / 1000), cores: busy };
}

export async function measureSlots(stack: BenchStack): Promise<BenchRow[]> {
  const repeats = stack.quick ? 2 : 5;
  const durationMs = stack.quick ? 1_500 : 5_000;
  const loops = 4;
  const jobType = `bench-slots-${uid()}`;
  const one: number[] = [];
  const three: number[] = [];
  const cores: { 1: number[]; 3: number[] } = { 1: [], 3: [] };
  await rate(stack, 1, loops, 1_000, jobType); // warm-up: slot rows, caches
  for (let r = 0; r < repeats; r++) {
    for (const side of alternate([1, 3] as const, r)) {
      const x = await rate(stack, side, loops, durationMs, jobType);
      (side === 1 ? one : three).push(x.perSec);
      if (x.cores !== null) cores[side].push(x.cores);
    }
    stack.log(`  slots repeat ${r + 1}/${repeats}: 1 process ${one.at(-1)!.toFixed(0)}/s, 3 processes ${three.at(-1)!.toFixed(0)}/s`);
  }
  await stack.pool.query('DELETE FROM concurrency_slots WHERE scope LIKE $1', [`type:${jobType}%`]);
  return [
    row({
      id: 'slots.scaling',
      section: 'concurrency slots',
      figure: `slot acquisitions (acquire + release, one job type, ${loops} acquirers per process, ${durationMs / 1000} s per run), 3 processes`,
      unit: 'acquisitions/s',
      value: spread(three),
      baseline: { label: '1 process, same acquirers each', unit: 'acquisitions/s', value: spread(one) },
      sense: 'higher-better',
      paired: true,
      notes: `each acquisition is one statement and its release another, both commits (FOR UPDATE SKIP LOCKED; no lock per job type); cores kept busy by Postgres and the acquirers: ${busyText(cores[1])} with 1 process, ${busyText(cores[3])} with 3, of ${os.cpus().length}`,
      details: { coresBusy: { one: cores[1].length ? spread(cores[1]) : null, three: cores[3].length ? spread(cores[3]) : null } },
    }),
  ];
}

const busyText = (xs: number[]) => (xs.length ? spread(xs).median.toFixed(2) : 'unknown');
