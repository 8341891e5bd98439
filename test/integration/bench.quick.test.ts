// `npm run bench -- --quick` as a smoke test: every measurement's code path runs (tiny sizes)
// against the suite's Postgres and Temporal, and produces a figure and a baseline. It fails only
// on errors (the bench exits non-zero, a figure is missing or not a number), never on timing:
// no assertion compares one figure with another.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Row {
  id: string;
  value: { median: number; samples: number[] } | null;
  baseline: { value: { median: number } | null } | null;
  ratio: number | null;
  ratioSpread?: { samples: number[] };
  skipped?: string;
  details?: unknown;
}

/** Measurements that need something outside the product (a binary) may report "not available". */
const MAY_SKIP = new Set(['machine.pgbench', 'machine.sqlite', 'replay.throughput']);
/** Each of these has a positive figure, a positive baseline and a finite (paired) ratio. */
const WITH_BASELINE = [
  'throughput.summarize',
  'throughput.summarize-vs-twin',
  'throughput.twin',
  'intake.http.p50',
  'intake.http.p99',
  'intake.floor.p50',
  'intake.options.p50',
  'intake.submit.p50',
  'intake.submit.p99',
  'intake.http-duplicate.p50',
  'intake.submit-duplicate.p50',
  'abuse.submit-with-slow-bodies.p50',
  'replay.throughput',
  'effects.statements-in-worker',
  'replay.vs-twin',
  'replay.twin',
  'replay.peak-in-flight',
  'replay.single-latency',
  'growth.submit.1000',
  'growth.claim.1000',
  'growth.scrape.1000',
  'memory.rss',
  'memory.per-job',
  'machine.sqlite-untuned',
];
/** Figures without a baseline that must be measured (finite; a difference of two timings may be of either sign). */
const FIGURES = [
  'intake.noop.p50',
  'throughput.commits-per-job',
  'perjob.round-trips',
  'perjob.wal',
  'perjob.upstream',
  'perjob.cpu.summarize',
  'perjob.cpu.twin',
  'perjob.cpu.bare',
  'perjob.temporal.summarize',
  'perjob.temporal.twin',
  'perjob.temporal.bare',
  'effects.added',
  'effects.commits-per-effect',
];

function runBench(out: string): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
  };
  const cli = inject('temporalCliPath');
  if (cli) env.TEMPORAL_CLI_PATH = cli;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/bench.ts'), '--quick', '--out', out], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('npm run bench -- --quick', () => {
  it('runs every measurement and reports each figure beside its baseline', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-quick-'));
    const out = path.join(dir, 'results.json');
    try {
      const { code, output } = await runBench(out);
      expect(code, output.slice(-4000)).toBe(0);
      const results = JSON.parse(await fs.readFile(out, 'utf8')) as {
        meta: { cores: number; mode: string; loadAverage: { start: number[]; end: number[] }; temporal: string };
        rows: Row[];
        errors: unknown[];
        capacity: string | null;
      };
      expect(results.errors).toEqual([]);
      expect(results.meta.mode).toBe('quick');
      expect(results.meta.cores).toBeGreaterThan(0);
      const byId = new Map(results.rows.map((r) => [r.id, r]));
      for (const r of results.rows) {
        if (r.skipped) {
          expect(MAY_SKIP.has(r.id), `${r.id} skipped: ${r.skipped}`).toBe(true);
          continue;
        }
        if (r.value) {
          expect(Number.isFinite(r.value.median), r.id).toBe(true);
          expect(r.value.samples.length, r.id).toBeGreaterThan(0);
        }
      }
      for (const id of WITH_BASELINE) {
        const r = byId.get(id);
        if (!r && id === 'machine.sqlite-untuned' && byId.get('machine.sqlite')?.skipped) continue;
        expect(r, `row ${id} missing; rows: ${[...byId.keys()].join(', ')}`).toBeDefined();
        if (r!.skipped) continue;
        expect(r!.value!.median, id).toBeGreaterThan(0);
        expect(r!.baseline?.value?.median, id).toBeGreaterThan(0);
        expect(Number.isFinite(r!.ratio), id).toBe(true);
        if (r!.ratioSpread) expect(r!.ratioSpread.samples.length, id).toBeGreaterThan(0);
      }
      for (const id of FIGURES) {
        const r = byId.get(id);
        expect(r, `row ${id} missing; rows: ${[...byId.keys()].join(', ')}`).toBeDefined();
        expect(r!.skipped, id).toBeUndefined();
        expect(Number.isFinite(r!.value?.median), id).toBe(true);
      }
      // Paired ratios: the throughput sides alternate, so each repeat gives one ratio.
      expect(byId.get('throughput.summarize')!.ratioSpread?.samples.length).toBeGreaterThan(1);
      // The peak in flight comes from the simulator: a figure, whatever it is.
      expect(byId.get('replay.peak-in-flight')!.value!.samples.length).toBeGreaterThan(0);
      // CPU seconds of every process beside the wall time.
      const cpu = byId.get('perjob.cpu.summarize')!.details as Record<string, { median: number } | null>;
      for (const p of ['api', 'worker', 'temporal', 'postgres']) expect(Number.isFinite(cpu[p]?.median), `cpu of ${p}`).toBe(true);
      // The capacity table, generated from the run.
      expect(results.capacity).toMatch(/\| 1,000 \|/);
      expect(results.meta.loadAverage.end).toHaveLength(3);
      const plans = byId.get('growth.plans')!.details as { plans: Record<string, string> };
      expect(Object.keys(plans.plans).length).toBeGreaterThan(0);
      expect(Object.values(plans.plans).join('\n')).not.toContain('could not EXPLAIN');
      expect(output).toMatch(/ratio = value \/ baseline/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
