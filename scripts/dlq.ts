/**
 * `npm run dlq -- <command>`: the dead-letter console for operators. A thin client of the
 * HTTP API (`DJ_API_URL`, default http://127.0.0.1:$HTTP_PORT; admin key `ADMIN_API_KEY`).
 *
 *   list [--state open|replaying|replayed|discarded] [--job-type T] [--tenant T]
 *   show ID
 *   replay (--ids a,b | --filter k=v [--filter k=v]) [--dry-run] [--batch-size N]
 *          [--concurrency N] [--rate-per-minute N] [--max-failures N] [--wait]
 *   progress REPLAY_ID            pause REPLAY_ID   resume REPLAY_ID   stop REPLAY_ID [--reason R]
 *   discard ID --reason R
 *
 * Every command takes `--json` (the API's JSON, unchanged) instead of the table.
 */
import { adminApiFromEnv, createApi, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: npm run dlq -- <command> [--json]
  list [--state open|replaying|replayed|discarded] [--job-type T] [--tenant T]
  show ID
  replay (--ids a,b | --filter key=value ...) [--dry-run] [--batch-size N] [--concurrency N]
         [--rate-per-minute N] [--max-failures N] [--wait]
  progress REPLAY_ID | pause REPLAY_ID | resume REPLAY_ID | stop REPLAY_ID [--reason R]
  discard ID --reason R
filter keys: jobType, tenantId, errorClass, statusCode, since, until, limit`;

interface Args {
  command: string;
  positional: string[];
  flags: Map<string, string[]>;
}

const BOOLEAN_FLAGS = new Set(['json', 'dry-run', 'wait', 'help']);

function parseArgs(argv: string[]): Args {
  const [command = 'help', ...rest] = argv;
  const positional: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const [name, inline] = a.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = BOOLEAN_FLAGS.has(name) ? 'true' : (inline ?? rest[++i]);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { command, positional, flags };
}

const flag = (a: Args, name: string) => a.flags.get(name)?.at(-1);
function intFlag(a: Args, name: string): number | undefined {
  const v = flag(a, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
  return Number(v);
}
function need(a: Args, what: string): string {
  const v = a.positional[0];
  if (!v) throw new UsageError(`missing ${what}`);
  return v;
}

function age(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7_200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3_600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

function printDeadLetter(d: any): void {
  const fields: Array<[string, unknown]> = [
    ['id', d.id],
    ['state', d.state],
    ['job', `${d.jobId} (run ${d.runId})`],
    ['tenant', d.tenantId],
    ['job type', d.jobType],
    ['error', `${d.errorClass}${d.statusCode ? ` (HTTP ${d.statusCode})` : ''} ${d.errorType ?? ''}`.trim()],
    ['message', d.message],
    ['failed step', d.failedStep],
    ['retry state', d.retryState],
    // Every step's attempts added; the job's own `attempts` is its highest attempt of one step.
    ['attempts', `${d.attempts} (all steps added; the job shows its highest attempt)`],
    ['code version', `${d.codeVersion}${d.buildId ? ` build ${d.buildId}` : ''}`],
    ['input', `${d.inputRef} sha256:${d.inputHash.slice(0, 16)}…`],
    ['failures', `${d.firstFailureAt} .. ${d.lastFailureAt}`],
    ['discard reason', d.discardReason],
  ];
  for (const [k, v] of fields) if (v !== undefined && v !== null) console.log(`${k.padEnd(15)} ${v}`);
  if (d.providerRequestIds?.length) {
    console.log('\nprovider requests');
    console.log(
      table(
        ['STEP', 'REQUEST ID', 'OUTCOME'],
        d.providerRequestIds.map((r: any) => [r.step, r.requestId, r.outcome]),
      ),
    );
  }
  if (d.replays?.length) {
    console.log('\nreplays');
    console.log(
      table(
        ['JOB', 'STATUS', 'CREATED'],
        d.replays.map((r: any) => [r.jobId, r.status, r.createdAt]),
      ),
    );
  }
  if (d.actions?.length) {
    console.log('\nhistory');
    console.log(
      table(
        ['AT', 'ACTION', 'ACTOR', 'DETAILS'],
        d.actions.map((a: any) => [a.at, a.action, a.actor, JSON.stringify(a.details)]),
      ),
    );
  }
}

function printProgress(p: any): void {
  const c = p.counts;
  console.log(
    `${p.replayId}  ${p.state}  total ${c.total}: ${c.succeeded} succeeded, ${c.failed} failed, ${c.skipped} skipped, ${c.running} running, ${c.pending} pending  (peak ${p.peakRunning} at once)${p.stopReason ? `  [${p.stopReason}]` : ''}`,
  );
}

function replayBody(a: Args): Record<string, unknown> {
  const ids = flag(a, 'ids');
  const filters = a.flags.get('filter') ?? [];
  if ((ids === undefined) === (filters.length === 0)) throw new UsageError('replay needs exactly one of --ids a,b or --filter key=value');
  const body: Record<string, unknown> = {};
  if (ids !== undefined)
    body.ids = ids
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  else {
    const filter: Record<string, unknown> = {};
    for (const f of filters) {
      const eq = f.indexOf('=');
      if (eq <= 0) throw new UsageError(`--filter must be key=value, got "${f}"`);
      const key = f.slice(0, eq);
      const value = f.slice(eq + 1);
      filter[key] = ['statusCode', 'limit'].includes(key) && /^\d+$/.test(value) ? Number(value) : value;
    }
    body.filter = filter;
  }
  if (a.flags.has('dry-run')) body.dryRun = true;
  for (const [name, key] of [
    ['batch-size', 'batchSize'],
    ['concurrency', 'concurrency'],
    ['rate-per-minute', 'ratePerMinute'],
    ['max-failures', 'maxFailures'],
  ] as const) {
    const v = intFlag(a, name);
    if (v !== undefined) body[key] = v;
  }
  return body;
}

const FINAL = new Set(['completed', 'stopped', 'halted']);

async function run(a: Args, api: Api): Promise<void> {
  const json = a.flags.has('json');
  const out = (v: unknown, pretty: () => void) => (json ? console.log(JSON.stringify(v, null, 2)) : pretty());
  switch (a.command) {
    case 'list': {
      const q = new URLSearchParams();
      for (const [f, k] of [
        ['state', 'state'],
        ['job-type', 'jobType'],
        ['tenant', 'tenantId'],
      ] as const)
        if (flag(a, f)) q.set(k, flag(a, f)!);
      const r = await api('GET', `/v1/dead-letters${q.size ? `?${q}` : ''}`);
      return out(r, () =>
        console.log(
          r.deadLetters.length === 0
            ? 'no dead letters'
            : table(
                ['ID', 'STATE', 'TYPE', 'TENANT', 'ERROR', 'HTTP', 'ATTEMPTS (ALL STEPS)', 'AGE', 'JOB'],
                r.deadLetters.map((d: any) => [
                  d.id,
                  d.state,
                  d.jobType,
                  d.tenantId,
                  d.errorClass,
                  d.statusCode,
                  d.attempts,
                  age(d.createdAt),
                  d.jobId,
                ]),
              ),
        ),
      );
    }
    case 'show': {
      const d = await api('GET', `/v1/dead-letters/${encodeURIComponent(need(a, 'dead letter ID'))}`);
      return out(d, () => printDeadLetter(d));
    }
    case 'replay': {
      const r = await api('POST', '/v1/dead-letters/replay', replayBody(a));
      if (r.dryRun) {
        return out(r, () => {
          console.log(
            table(
              ['DEAD LETTER', 'REPLAY JOB', 'EFFECTS', 'CHANGED SINCE FAILURE'],
              r.deadLetters.map((p: any) => [
                p.deadLetterId,
                p.replayJobId,
                p.effects.map((e: any) => `${e.step}=${e.action}`).join(' '),
                [
                  p.changed.codeVersion ? `code ${p.recorded.codeVersion}->${p.current.codeVersion}` : '',
                  p.changed.inputHash ? 'input' : '',
                ]
                  .filter(Boolean)
                  .join(', ') || 'nothing',
              ]),
            ),
          );
          console.log(
            `\ndry run: ${r.count} dead letter(s); reuse = stored success, no upstream call; execute = called again with the same effect key`,
          );
        });
      }
      if (!json) console.log(`replay ${r.replayId} started for ${r.count} dead letter(s); progress: npm run dlq -- progress ${r.replayId}`);
      if (!a.flags.has('wait')) return json ? console.log(JSON.stringify(r, null, 2)) : undefined;
      for (;;) {
        const p = await api('GET', r.statusUrl);
        if (!json) printProgress(p);
        if (FINAL.has(p.state)) return json ? console.log(JSON.stringify(p, null, 2)) : undefined;
        await new Promise((res) => setTimeout(res, 2_000));
      }
    }
    case 'progress': {
      const p = await api('GET', `/v1/dead-letters/replays/${encodeURIComponent(need(a, 'replay ID'))}`);
      return out(p, () => {
        printProgress(p);
        console.log(
          table(
            ['DEAD LETTER', 'STATUS', 'REPLAY JOB', 'DETAIL'],
            p.items.map((i: any) => [i.deadLetterId, i.status, i.replayJobId, i.detail]),
          ),
        );
      });
    }
    case 'pause':
    case 'resume':
    case 'stop': {
      const body = a.command === 'stop' ? { ...(flag(a, 'reason') ? { reason: flag(a, 'reason') } : {}) } : undefined;
      const r = await api('POST', `/v1/dead-letters/replays/${encodeURIComponent(need(a, 'replay ID'))}/${a.command}`, body);
      return out(r, () => console.log(`${a.command} sent to ${r.replayId}`));
    }
    case 'discard': {
      const reason = flag(a, 'reason');
      if (!reason) throw new UsageError('discard needs --reason "why this job is not replayed"');
      const d = await api('POST', `/v1/dead-letters/${encodeURIComponent(need(a, 'dead letter ID'))}/discard`, { reason });
      return out(d, () => console.log(`${d.id} ${d.state}: ${d.discardReason}`));
    }
    case 'help':
    case '--help':
      return console.log(USAGE);
    default:
      throw new UsageError(`unknown command "${a.command}"`);
  }
}

async function main(): Promise<void> {
  const { apiUrl, adminKey } = adminApiFromEnv(defaultJobRegistry);
  await run(parseArgs(process.argv.slice(2)), createApi(apiUrl, adminKey));
}

main().catch((err: Error) => {
  console.error(err instanceof UsageError ? `${err.message}\n\n${USAGE}` : `error: ${err.message}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
