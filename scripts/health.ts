/**
 * `npm run health`: the queue-health report in the terminal, with trend lines and the
 * recovery ETA in words.
 *
 *   npm run health                       from the running API (DJ_API_URL, default http://127.0.0.1:$HTTP_PORT; ADMIN_API_KEY)
 *   npm run health -- --url URL          from another API
 *   npm run health -- --direct           straight from DATABASE_URL (and TEMPORAL_ADDRESS, if set)
 *   npm run health -- --watch [SECONDS]  refresh (default every 10 s)
 *   npm run health -- --json             the raw JSON (GET /v1/admin/queue-health)
 */
import { loadConfig } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { formatAge, formatCount, formatDuration, formatRate, sparkline, WINDOWS } from '../lib/health.js';
import { createLogger } from '../lib/logger.js';
import { connectClient } from '../lib/temporal.js';
import { collectQueueHealth, type QueueHealth } from '../services/queue-health.js';
import { defaultJobRegistry } from '../jobs/index.js';
import { jobRegistryFromEnv } from '../job-api/load.js';

const HISTORY_MINUTES = 30;

interface Args {
  url?: string;
  direct: boolean;
  json: boolean;
  watchSeconds?: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { direct: false, json: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === '--url') a.url = argv[++i];
    else if (v === '--direct') a.direct = true;
    else if (v === '--json') a.json = true;
    else if (v === '--watch') a.watchSeconds = /^\d+$/.test(argv[i + 1] ?? '') ? Number(argv[++i]) : 10;
    else throw new Error(`unknown argument ${v}; see the header of scripts/health.ts`);
  }
  return a;
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : ' '.repeat(n - s.length) + s);
const n2 = (v: number | null | undefined) => (v === null || v === undefined ? '-' : String(Math.round(v * 10) / 10));

const etaShort = (r: QueueHealth['recovery']) => (r.state === 'draining' ? formatDuration(r.etaSeconds!) : r.state);

/** The report as lines of text: headline ETA first, then backlog, rates, Temporal, job types, failures. */
function renderReport(h: QueueHealth): string {
  const out: string[] = [];
  const hist = h.history;
  const series = (k: string) => sparkline(hist?.samples[k] ?? []);
  const row = (label: string, now: string, trend = '') => out.push(`  ${pad(label, 26)}${lpad(now, 12)}   ${trend}`);
  out.push(
    `durable-jobs queue health at ${h.generatedAt} (database time; trends: last ${hist?.minutes.length ?? 0} min, one mark per minute)`,
  );
  out.push('');
  out.push(
    `RECOVERY  ${h.recovery.words}   [${h.headlineWindow} window; ${WINDOWS.filter((w) => w.key !== h.headlineWindow)
      .map((w) => `${w.key}: ${etaShort(h.recoveryByWindow[w.key])}`)
      .join(', ')}]`,
  );
  const d = h.degradation;
  const paused = d.pausedPriorities.length
    ? d.pausedPriorities.map((p) => `${p} since ${d.pausedSince[p]}`).join(', ') + ` (by ${d.updatedBy})`
    : 'nothing paused';
  out.push(`DEGRADED  ${paused}; recovery rate ${formatRate(d.recoveryRatePerMinute)}${d.resume ? `; ${d.resume.words}` : ''}`);
  if (d.rampHalted) out.push(`RAMP HALTED at ${d.rampHalted.at}: ${d.rampHalted.reason}`);
  out.push('');
  out.push('BACKLOG');
  row('active (admitted, unfinished)', formatCount(h.backlog.active), hist ? sparkline(hist.unfinished) : '');
  row('  queued / retrying / running', `${h.backlog.queued}/${h.backlog.retrying}/${h.backlog.running}`);
  row('deferred', formatCount(h.backlog.deferred), series('deferred'));
  row('oldest waiting for a worker', formatAge(h.backlog.oldestWaitingAgeSeconds), series('oldestWaitingAgeSeconds'));
  row('oldest unfinished', formatAge(h.backlog.oldestUnfinishedAgeSeconds));
  out.push('');
  out.push(`RATES (/min)${' '.repeat(16)}${WINDOWS.map((w) => lpad(w.key, 8)).join('')}   per-minute counts`);
  const rate = (label: string, pw: Record<string, number>, trend: number[] | undefined) =>
    out.push(`  ${pad(label, 26)}${WINDOWS.map((w) => lpad(n2(pw[w.key]), 8)).join('')}   ${trend ? sparkline(trend) : ''}`);
  rate('arrivals', h.rates.arrivalsPerMinute, hist?.arrivals);
  rate('entered (not deferred)', h.rates.enteredPerMinute, undefined);
  rate('completions', h.rates.completionsPerMinute, hist?.completions);
  rate('net drain', h.rates.netDrainPerMinute, undefined);
  out.push('');
  for (const t of h.taskQueues) {
    const s = (x: typeof t.workflow) =>
      x
        ? `backlog ${formatCount(x.backlogCount)} (oldest ${formatAge(x.backlogAgeSeconds)}), ${x.pollers} poller(s), dispatch ${x.dispatchRatePerSecond}/s`
        : 'no stats';
    out.push(
      `TEMPORAL  ${t.name}: workflow tasks ${s(t.workflow)}; activity tasks ${s(t.activity)}${t.note ? ` [${t.note}]` : ''}   ${series('temporalActivityBacklog')}`,
    );
  }
  for (const u of h.unpolledJobTypes ?? []) out.push(`STUCK     ${u.words}: start a worker given that type`);
  out.push('');
  out.push('BY JOB TYPE (queue time after admission and execution time: p50/p95 over jobs finished in 15 min)');
  for (const [type, j] of Object.entries(h.jobTypes)) {
    out.push(
      `  ${pad(type, 12)} active ${j.backlog.active} (deferred ${j.backlog.deferred}), oldest waiting ${formatAge(j.backlog.oldestWaitingAgeSeconds)}; ` +
        `in ${n2(j.rates.enteredPerMinute['1m'])}/min, out ${n2(j.rates.completionsPerMinute['1m'])}/min: ${j.recovery.words}`,
    );
    out.push(
      `  ${' '.repeat(12)} queue ${n2(j.queueSeconds.p50)}/${n2(j.queueSeconds.p95)} s, execution ${n2(j.executionSeconds.p50)}/${n2(j.executionSeconds.p95)} s, ` +
        `attempts/job avg ${n2(j.attemptsPerJob.avg)} max ${j.attemptsPerJob.max ?? '-'}; 15 min: ${j.finished15m.succeeded} succeeded, ${j.finished15m.deadLettered} dead-lettered, ${j.finished15m.cancelled} cancelled`,
    );
  }
  out.push('');
  out.push(`FAILURES${' '.repeat(20)}${WINDOWS.map((w) => lpad(w.key, 8)).join('')}`);
  const counts = (label: string, pw: Record<string, number>, extra = '') =>
    out.push(`  ${pad(label, 26)}${WINDOWS.map((w) => lpad(String(pw[w.key] ?? 0), 8)).join('')}   ${extra}`);
  counts(
    'lease expirations',
    h.leaseExpirations.perWindow,
    `overdue without retry: ${h.leaseExpirations.overdue}   ${series('leaseExpirations1m')}`,
  );
  for (const [o, pw] of Object.entries(h.attempts.byOutcome)) counts(`attempts: ${o}`, pw);
  counts('reconciliations', h.reconciliations.perWindow, `effects in doubt now: ${h.reconciliations.effectsInDoubt}`);
  counts(
    'dead letters created',
    h.deadLetters.newPerWindow,
    `open ${h.deadLetters.open}, oldest open ${formatAge(h.deadLetters.oldestOpenAgeSeconds)}   ${series('deadLettersOpen')}`,
  );
  counts('intake 503s', h.intakeRejections.perWindow, series('intakeRejections1m'));
  out.push(
    `  ${pad('outbox', 26)}pending ${h.outbox.pending}, oldest ${formatAge(h.outbox.oldestPendingAgeSeconds)}, overdue ${h.outbox.overdue}   ${series('outboxPending')}`,
  );
  return out.join('\n');
}

async function fromApi(url: string, adminKey: string): Promise<QueueHealth> {
  let res: Response;
  try {
    res = await fetch(`${url.replace(/\/+$/, '')}/v1/admin/queue-health?history=${HISTORY_MINUTES}`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
  } catch (err) {
    throw new Error(
      `cannot reach the API at ${url} (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}); is \`npm start\` running? (DJ_API_URL, or --direct)`,
    );
  }
  if (res.status === 401) throw new Error(`401 from ${url}: set ADMIN_API_KEY to the API's admin key`);
  if (!res.ok) throw new Error(`${res.status} from ${url}: ${await res.text()}`);
  return (await res.json()) as QueueHealth;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // The types of DURABLE_JOBS_JOBS when set (a team's registry), else the shipped ones: --direct reads each type's queue.
  const jobs = await jobRegistryFromEnv(process.env, () => defaultJobRegistry);
  const config = loadConfig(process.env, { jobTypes: jobs.names, fastPathTypes: jobs.fastPathTypes });
  // `npm start` runs in dev mode with the documented admin key; production sets ADMIN_API_KEY.
  const adminKey =
    config.adminApiKey ??
    loadConfig(process.env, { jobTypes: defaultJobRegistry.names, fastPathTypes: defaultJobRegistry.fastPathTypes, mode: 'dev' })
      .adminApiKey!;
  let read: () => Promise<QueueHealth>;
  let close = async () => undefined as void;
  if (args.direct) {
    if (!config.databaseUrl) throw new Error("--direct needs DATABASE_URL (and TEMPORAL_ADDRESS for Temporal's task-queue stats)");
    const pool = createPool(config.databaseUrl, createLogger('health', 'warn'), 2);
    const temporal = config.temporalAddress ? await connectClient(config, config.temporalAddress) : undefined;
    read = () =>
      collectQueueHealth(
        {
          pool,
          temporal,
          taskQueues: jobs.taskQueues(config.taskQueue),
          jobTypeQueues: Object.fromEntries(jobs.modules.map((m) => [m.definition.name, m.definition.taskQueue ?? config.taskQueue])),
        },
        { historyMinutes: HISTORY_MINUTES },
      );
    close = async () => {
      await pool.end();
      await temporal?.connection.close();
    };
  } else {
    const url = args.url ?? config.apiUrl;
    read = () => fromApi(url, adminKey);
  }
  try {
    for (;;) {
      const h = await read();
      const text = args.json ? JSON.stringify(h, null, 2) : renderReport(h);
      if (args.watchSeconds && !args.json) process.stdout.write('\x1b[2J\x1b[H');
      console.log(text);
      if (!args.watchSeconds) break;
      await new Promise((r) => setTimeout(r, args.watchSeconds! * 1000));
    }
  } finally {
    await close();
  }
}

main().catch((err: Error) => {
  console.error(`health: ${err.message}`);
  process.exit(1);
});
