/**
 * Concurrency-slot acquisitions per second with 1 and with 3 processes (issue 11's figure
 * "3 worker processes ÷ 1"), on a fresh embedded Postgres (fsync on). Each process runs the
 * churn of scripts/slot-churn.ts: 4 connections taking a slot of one job type for one of
 * 20 tenants, holding it `--hold` ms (default 0: pure acquisition cost; 20 stands for a short
 * upstream call), releasing it. Caps are high enough that they rarely refuse, so the figure is
 * the cost of taking and giving back a slot. Not a test: a measurement, printed as JSON.
 *
 *   npx tsx scripts/slot-throughput.ts [--hold 20] [--seconds 8] [--repeats 3]
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../lib/migrate.js';
import { startEmbeddedPostgres } from './lib/embedded-pg.js';
import type { SlotChurn } from './slot-churn.js';

const CHURN = fileURLToPath(new URL('./slot-churn.ts', import.meta.url));
const { values } = parseArgs({
  options: { hold: { type: 'string', default: '0' }, seconds: { type: 'string', default: '8' }, repeats: { type: 'string', default: '3' } },
});

function churn(c: SlotChurn): Promise<{ acquired: number; refused: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHURN, JSON.stringify(c)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`churn exited ${code}`)),
    );
  });
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'dj-slots-'));
// Started as root, Postgres runs as its own user: it must be able to enter the directory.
await chmod(dir, 0o755);
const pgServer = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), log: () => undefined, persistent: true });
try {
  const pool = new pg.Pool({ connectionString: pgServer.url, max: 2 });
  await migrate(pool);
  await pool.end();
  const durationMs = Number(values.seconds) * 1000;
  const c: SlotChurn = {
    databaseUrl: pgServer.url,
    jobTypes: ['summarize'],
    tenants: Array.from({ length: 20 }, (_, i) => `t${i}`),
    perTenant: 8,
    global: 1000,
    total: 1000,
    durationMs,
    holdMs: Number(values.hold),
    audit: false,
    lanes: 4,
  };
  await churn({ ...c, durationMs: 2_000 }); // warm-up: slot rows created, caches warm
  const runs: Array<{ processes: number; perSecond: number; refused: number }> = [];
  for (let r = 0; r < Number(values.repeats); r++) {
    // Alternate the order so neither side always runs on the warmer database.
    for (const n of r % 2 === 0 ? [1, 3] : [3, 1]) {
      const results = await Promise.all(Array.from({ length: n }, () => churn(c)));
      const acquired = results.reduce((s, x) => s + x.acquired, 0);
      runs.push({
        processes: n,
        perSecond: Math.round(acquired / (durationMs / 1000)),
        refused: results.reduce((s, x) => s + x.refused, 0),
      });
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const one = runs.filter((x) => x.processes === 1).map((x) => x.perSecond);
  const three = runs.filter((x) => x.processes === 3).map((x) => x.perSecond);
  const load = os.loadavg().map((x) => x.toFixed(2));
  console.log(
    JSON.stringify(
      {
        holdMs: c.holdMs,
        runs,
        median1: median(one),
        median3: median(three),
        ratio: +(median(three) / median(one)).toFixed(2),
        loadavg: load,
        cpus: os.cpus().length,
      },
      null,
      2,
    ),
  );
} finally {
  await pgServer.stop();
  await rm(dir, { recursive: true, force: true });
}
