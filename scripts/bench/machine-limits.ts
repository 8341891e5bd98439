// The machine's own limits, measured in the same run so every ratio can be read against them:
//  - Postgres: the commit rate of a one-row insert, pgbench with 1 client and
//    synchronous_commit on, against the stack's Postgres;
//  - the Temporal dev server: bare-workflow throughput with its SQLite file tuned (WAL,
//    synchronous=NORMAL, as `npm start` runs it) and untuned (a file with SQLite's defaults:
//    rollback journal, synchronous=FULL), each on a dev server of its own.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../lib/dev-server.js';
import { uid, type BenchStack } from './stack.js';
import { row, skippedRow, spread, type BenchRow } from './stats.js';
import { runBare } from './throughput.js';

export interface MachineResult {
  rows: BenchRow[];
  pgbenchTps: number | null;
}

export async function measureMachineLimits(stack: BenchStack): Promise<MachineResult> {
  const pgb = await measurePgbench(stack);
  const rows = [pgb.row, ...(await measureDevServers(stack))];
  return { rows, pgbenchTps: pgb.tps };
}

function findPgbench(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter))
    if (dir && existsSync(path.join(dir, 'pgbench'))) return path.join(dir, 'pgbench');
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    for (const v of readdirSync(base).sort().reverse())
      if (existsSync(path.join(base, v, 'bin', 'pgbench'))) return path.join(base, v, 'bin', 'pgbench');
  }
  return null;
}

async function measurePgbench(stack: BenchStack): Promise<{ row: BenchRow; tps: number | null }> {
  const bin = findPgbench();
  if (!bin)
    return {
      row: skippedRow(
        'machine.pgbench',
        'machine limits',
        'Postgres commit rate (pgbench)',
        'not available: pgbench not found on PATH or under /usr/lib/postgresql',
      ),
      tps: null,
    };
  const secs = stack.quick ? 2 : 10;
  const repeats = stack.quick ? 2 : 3;
  await stack.pool.query(
    'CREATE TABLE IF NOT EXISTS bench_commit (id bigserial PRIMARY KEY, v integer NOT NULL, at timestamptz NOT NULL DEFAULT now())',
  );
  const script = path.join(stack.tmpDir, 'one-row-insert.sql');
  await fs.writeFile(script, 'INSERT INTO bench_commit (v) VALUES (1);\n');
  const settings = Object.fromEntries(
    await Promise.all(
      ['fsync', 'synchronous_commit', 'wal_sync_method', 'server_version'].map(
        async (s) => [s, (await stack.pool.query<Record<string, string>>(`SHOW ${s}`)).rows[0]![s]] as const,
      ),
    ),
  );
  const tps: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const out = await run(bin, ['-n', '-c', '1', '-j', '1', '-T', String(secs), '-M', 'prepared', '-f', script, stack.databaseUrl], {
      ...process.env,
      PGOPTIONS: '-c synchronous_commit=on',
    });
    const m = /tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/.exec(out);
    if (!m) throw new Error(`could not read tps from pgbench output:\n${out.slice(-800)}`);
    tps.push(Number(m[1]));
  }
  await stack.pool.query('DROP TABLE bench_commit');
  const s = spread(tps);
  stack.log(`  pgbench: ${s.median.toFixed(0)} commits/s (fsync=${settings.fsync})`);
  return {
    tps: s.median,
    row: row({
      id: 'machine.pgbench',
      section: 'machine limits',
      figure: `Postgres one-row insert commits, pgbench 1 client, synchronous_commit on, ${secs} s per repeat`,
      unit: 'commits/s',
      value: s,
      baseline: null,
      sense: 'info',
      details: { settings },
      notes: `server fsync=${settings.fsync}, wal_sync_method=${settings.wal_sync_method}`,
    }),
  };
}

async function measureDevServers(stack: BenchStack): Promise<BenchRow[]> {
  if (!stack.cliPath)
    return [
      skippedRow(
        'machine.sqlite',
        'machine limits',
        'dev server SQLite tuned vs untuned',
        'not available: no Temporal CLI binary to start extra dev servers',
      ),
    ];
  const n = stack.quick ? 10 : 200;
  const repeats = stack.quick ? 1 : 3;
  const servers: DevServer[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  const rates = { tuned: [] as number[], untuned: [] as number[] };
  try {
    const start = (name: string, pragmas?: string[]) =>
      startDevServer({
        cliPath: stack.cliPath,
        port: 0,
        headless: true,
        dbFilename: path.join(stack.tmpDir, `${name}-${uid()}.sqlite`),
        log: () => undefined,
        ...(pragmas ? { sqlitePragmas: pragmas } : {}),
      });
    const [tuned, untuned] = await Promise.all([start('tuned'), start('untuned', [])]);
    servers.push(tuned, untuned);
    const setups = await Promise.all(
      [tuned, untuned].map(async (dev) => {
        const native = await NativeConnection.connect({ address: dev.address });
        const conn = await Connection.connect({ address: dev.address });
        closers.push(
          () => conn.close(),
          () => native.close(),
        );
        const queue = `bench-sqlite-${uid()}`;
        const w = await stack.startBareWorker(queue, { connection: native, namespace: 'default' });
        closers.push(() => w.stop());
        return { client: new Client({ connection: conn, namespace: 'default' }), queue, done: 0 };
      }),
    );
    // Warm-up, then alternate the two servers per repeat.
    for (const s of setups) {
      await runBare({ temporal: s.client }, s.queue, `warm-${uid()}`, 5, s.done);
      s.done += 5;
    }
    for (let r = 0; r < repeats; r++) {
      for (const [i, key] of (['tuned', 'untuned'] as const).entries()) {
        const s = setups[i]!;
        rates[key].push((await runBare({ temporal: s.client }, s.queue, `${key}-${r}-${uid()}`, n, s.done)).perSec);
        s.done += n;
      }
      stack.log(
        `  dev server repeat ${r + 1}/${repeats}: tuned ${rates.tuned.at(-1)!.toFixed(1)} wf/s, untuned ${rates.untuned.at(-1)!.toFixed(1)} wf/s`,
      );
    }
  } finally {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    await Promise.all(servers.map((s) => s.stop().catch(() => undefined)));
  }
  return [
    row({
      id: 'machine.sqlite-tuned',
      section: 'machine limits',
      figure: `dev server, SQLite file tuned (WAL, synchronous=NORMAL): bare workflows (N=${n})`,
      unit: 'wf/s',
      value: spread(rates.tuned),
      baseline: null,
      sense: 'info',
    }),
    row({
      id: 'machine.sqlite-untuned',
      section: 'machine limits',
      figure: `dev server, SQLite file untuned (default pragmas): bare workflows (N=${n})`,
      unit: 'wf/s',
      value: spread(rates.untuned),
      baseline: { label: 'tuned file', unit: 'wf/s', value: spread(rates.tuned) },
      sense: 'higher-better',
    }),
  ];
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { env, timeout: 120_000, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(bin)} failed: ${err.message}\n${stderr.slice(-800)}`));
      else resolve(`${stdout}\n${stderr}`);
    });
  });
}
