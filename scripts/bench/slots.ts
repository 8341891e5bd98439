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
  mode: 'slots' | 'floor' = 'slots',
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
      mode,
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
  // The floor's rows: one per acquirer, shared with no one (scripts/bench/slot-child.ts, mode `floor`).
  await stack.pool.query('CREATE TABLE IF NOT EXISTS bench_slot_floor (id text PRIMARY KEY, n int NOT NULL DEFAULT 0)');
  type Side = 'slots1' | 'slots3' | 'floor1' | 'floor3';
  const sides: Side[] = ['slots1', 'slots3', 'floor1', 'floor3'];
  const rates: Record<Side, number[]> = { slots1: [], slots3: [], floor1: [], floor3: [] };
  const cores: Record<Side, number[]> = { slots1: [], slots3: [], floor1: [], floor3: [] };
  const run = (side: Side, ms: number) =>
    rate(stack, side.endsWith('3') ? 3 : 1, loops, ms, jobType, side.startsWith('floor') ? 'floor' : 'slots');
  await run('slots1', 1_000); // warm-up: slot rows, caches
  await run('floor1', 1_000);
  for (let r = 0; r < repeats; r++) {
    for (const side of alternate(sides, r)) {
      const x = await run(side, durationMs);
      rates[side].push(x.perSec);
      if (x.cores !== null) cores[side].push(x.cores);
    }
    stack.log(
      `  slots repeat ${r + 1}/${repeats}: 1 process ${rates.slots1.at(-1)!.toFixed(0)}/s, 3 processes ${rates.slots3.at(-1)!.toFixed(0)}/s; floor ${rates.floor1.at(-1)!.toFixed(0)}/s, ${rates.floor3.at(-1)!.toFixed(0)}/s`,
    );
  }
  await stack.pool.query('DELETE FROM concurrency_slots WHERE scope LIKE $1', [`type:${jobType}%`]);
  await stack.pool.query('DROP TABLE IF EXISTS bench_slot_floor');
  const scaling = (three: number[], one: number[]) => three.map((x, i) => x / one[i]!);
  const slotScaling = scaling(rates.slots3, rates.slots1);
  const floorScaling = scaling(rates.floor3, rates.floor1);
  const per = `${loops} acquirers per process, ${durationMs / 1000} s per run`;
  return [
    row({
      id: 'slots.scaling',
      section: 'concurrency slots',
      figure: `slot acquisitions (acquire + release, one job type, ${per}), 3 processes`,
      unit: 'acquisitions/s',
      value: spread(rates.slots3),
      baseline: { label: '1 process, same acquirers each', unit: 'acquisitions/s', value: spread(rates.slots1) },
      sense: 'higher-better',
      paired: true,
      notes: `each acquisition is one statement and its release another, both commits (FOR UPDATE SKIP LOCKED; no lock per job type); cores kept busy by Postgres and the acquirers: ${busyText(cores.slots1)} with 1 process, ${busyText(cores.slots3)} with 3, of ${os.cpus().length}`,
      details: {
        coresBusy: { one: cores.slots1.length ? spread(cores.slots1) : null, three: cores.slots3.length ? spread(cores.slots3) : null },
      },
    }),
    row({
      id: 'slots.floor',
      section: 'concurrency slots',
      figure: `the floor: two one-row commits per round on rows no process shares (${per}), 3 processes`,
      unit: 'rounds/s',
      value: spread(rates.floor3),
      baseline: { label: '1 process, same loops each', unit: 'rounds/s', value: spread(rates.floor1) },
      sense: 'higher-better',
      paired: true,
      notes: `how far commits of 3 processes scale over 1 on this machine with nothing shared, the reference for the row above (its cheaper statements leave more headroom on busy cores, so it is not an exact ceiling); cores kept busy: ${busyText(cores.floor1)} with 1 process, ${busyText(cores.floor3)} with 3`,
    }),
    row({
      id: 'slots.scaling-vs-floor',
      section: 'concurrency slots',
      figure: "slot scaling (3 processes ÷ 1) beside the floor's scaling (3 processes ÷ 1), paired per repeat",
      unit: 'x',
      value: spread(slotScaling),
      baseline: { label: "the floor's scaling", unit: 'x', value: spread(floorScaling) },
      sense: 'higher-better',
      paired: true,
      notes:
        "at 1.00x the slots would scale as far as commits with nothing shared do on this machine; below it, either something of ours serialises the processes or the slots' costlier statements leave less headroom on busy cores (the floor's own one-process run keeps fewer cores busy)",
    }),
  ];
}

const busyText = (xs: number[]) => (xs.length ? spread(xs).median.toFixed(2) : 'unknown');
