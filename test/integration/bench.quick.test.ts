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
  skipped?: string;
}

/** Measurements that need something outside the product (a binary) may report "not available". */
const MAY_SKIP = new Set(['machine.pgbench', 'machine.sqlite', 'replay.throughput']);
const WITH_BASELINE = [
  'throughput.summarize',
  'intake.http.p50',
  'intake.http.p99',
  'intake.submit.p50',
  'intake.submit.p99',
  'intake.http-duplicate.p50',
  'intake.submit-duplicate.p50',
  'effects.run-effect.p50',
  'effects.run-effect-slot.p50',
  'replay.throughput',
  'growth.submit.1000',
  'growth.claim.1000',
  'memory.rss',
  'memory.per-job',
  'machine.sqlite-untuned',
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
        meta: { cores: number; mode: string };
        rows: Row[];
        errors: unknown[];
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
      }
      expect(byId.get('growth.plans')).toBeDefined();
      expect(output).toMatch(/ratio = value \/ baseline/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
