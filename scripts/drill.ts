/**
 * `npm run drill [-- --json FILE] [-- --only 1,4 | 1-10]`: the pre-launch failure drill. Starts its
 * own stack (or uses the one the environment names), runs each checklist item with real
 * faults, prints one PASS/FAIL row per item and exits non-zero on any FAIL (in CI also on any SKIP).
 */
import os from 'node:os';
import { coreItems } from './drill/items.js';
import { drillExitCode, parseOnly, printTable, writeJson, type DrillRow } from './drill/report.js';
import { startDrillStack } from './drill/stack.js';
import { DrillCheckFailed } from './drill/support.js';
import { drillStartMessage, drillUsage } from './drill/usage.js';
import { loadConfigOrExit } from '../lib/config-or-exit.js';
import { defaultJobRegistry } from '../jobs/index.js';

function parseArgs(argv: string[]): { json?: string; only?: Set<string> } {
  const out: { json?: string; only?: Set<string> } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') out.json = argv[++i];
    else if (a === '--only') {
      try {
        out.only = parseOnly(argv[++i] ?? '');
      } catch (err) {
        console.error(`drill: ${(err as Error).message}`);
        process.exit(2);
      }
    } else if (a === '--help' || a === '-h') {
      console.log(drillUsage(coreItems));
      process.exit(0);
    } else {
      console.error(`drill: unknown argument "${a}" (see --help)`);
      process.exit(2);
    }
  }
  if (out.json === '') {
    console.error('drill: --json needs a file name');
    process.exit(2);
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const known = new Set(coreItems.map((i) => i.item.split(' ')[0]!));
const unknown = [...(args.only ?? [])].filter((n) => !known.has(n));
if (unknown.length) {
  console.error(`drill: no item ${unknown.join(', ')} (items: ${[...known].join(', ')})`);
  process.exit(2);
}
const say = (m: string) => console.log(`[drill] ${m}`);
/** Worker processes the drill keeps running (items 2 and 3 kill one and need another). */
const WORKERS = 2;
const started = Date.now();
const config = loadConfigOrExit('drill', process.env, {
  jobTypes: defaultJobRegistry.names,
  fastPathTypes: defaultJobRegistry.fastPathTypes,
  mode: 'dev',
});
say(
  drillStartMessage({
    databaseUrl: config.databaseUrl,
    temporalAddress: config.temporalAddress,
    providerUrl: config.providerUrl,
    temporalMode: process.env.TEMPORAL_MODE === 'server' ? 'server' : 'dev',
    workers: WORKERS,
  }),
);
const stack = await startDrillStack(say);
const rows: DrillRow[] = [];
try {
  await Promise.all(Array.from({ length: WORKERS }, () => stack.spawnWorker()));
  for (const item of coreItems) {
    const number = item.item.split(' ')[0]!;
    if (args.only && !args.only.has(number)) continue;
    const t0 = Date.now();
    say(`item ${item.item} …`);
    if (item.needs === 'own-temporal-and-postgres' && !(stack.ownsTemporal && stack.ownsPostgres)) {
      rows.push({
        item: item.item,
        done: 'not run',
        observed: 'needs a Temporal and Postgres the drill started (TEMPORAL_ADDRESS or DATABASE_URL is set)',
        verdict: 'SKIP',
        seconds: 0,
      });
      continue;
    }
    if (item.needs === 'own-temporal-server' && stack.temporalKind !== 'server') {
      rows.push({
        item: item.item,
        done: 'not run',
        observed: 'needs temporal-server: run the drill with TEMPORAL_MODE=server (and without TEMPORAL_ADDRESS)',
        verdict: 'SKIP',
        seconds: 0,
      });
      continue;
    }
    try {
      const r = await item.run(stack);
      rows.push({ item: item.item, ...r, verdict: 'PASS', seconds: (Date.now() - t0) / 1000 });
    } catch (err) {
      const observed =
        err instanceof DrillCheckFailed ? err.message : `error: ${(err as Error).stack?.split('\n').slice(0, 3).join(' | ')}`;
      rows.push({ item: item.item, done: 'see observed', observed, verdict: 'FAIL', seconds: (Date.now() - t0) / 1000 });
    }
    // A dead worker from a failed item must not take the next item down with it.
    const alive = stack.workers.filter((w) => w.alive()).length;
    for (let i = alive; i < WORKERS; i++) await stack.spawnWorker();
  }
} finally {
  await stack.close();
}
printTable(rows);
const total = Math.round((Date.now() - started) / 1000);
console.log(`drill finished in ${total} s on ${os.cpus().length} cores`);
if (args.json) await writeJson(args.json, rows, { finishedAt: new Date().toISOString(), seconds: total, cores: os.cpus().length });
const code = drillExitCode(rows);
if (code && !rows.some((r) => r.verdict === 'FAIL'))
  console.log('CI is set: a skipped item fails the drill (select the items that apply with --only)');
process.exit(code);
