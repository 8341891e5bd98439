/**
 * `npm run job -- timeline <jobId> [--json]`: one job's timeline for an operator, across
 * Postgres and Temporal, with the stage verdict above it. A thin client of
 * `GET /v1/admin/jobs/{jobId}/timeline`.
 *
 * `npm run job -- list [--tenant T] [--state S] [--type X] [--tag K:V] [--created-after T]
 * [--created-before T] [--limit N] [--cursor C] [--json]`: one page of jobs across tenants,
 * newest first, and the command for the next page. A thin client of `GET /v1/admin/jobs`,
 * which validates the filters (a bad one is its 400, printed with the parameter it names).
 *
 * Both talk to `DJ_API_URL` (default http://127.0.0.1:$HTTP_PORT) with the admin key
 * `ADMIN_API_KEY`. `--json` prints the API's JSON unchanged.
 */
import { adminApiFromEnv, createApi, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: npm run job -- timeline <jobId> [--json]
       npm run job -- list [--tenant T] [--state S[,S]] [--type X] [--tag KEY:VALUE]
                           [--created-after ISO] [--created-before ISO] [--limit N] [--cursor C] [--json]`;

/** `list`'s flags and the admin API's query parameter each one sets. */
const LIST_FLAGS: Record<string, string> = {
  '--tenant': 'tenantId',
  '--state': 'state',
  '--type': 'type',
  '--tag': 'tag',
  '--created-after': 'createdAfter',
  '--created-before': 'createdBefore',
  '--limit': 'limit',
  '--cursor': 'cursor',
};

const ms = (v: number | undefined) =>
  v === undefined ? '-' : v < 1_000 ? `${v} ms` : v < 120_000 ? `${(v / 1_000).toFixed(1)} s` : `${Math.round(v / 60_000)} min`;

function printTimeline(t: any): void {
  console.log(`${t.jobId}  ${t.jobType}  ${t.priority}  tenant ${t.tenantId}  status ${t.status}`);
  console.log(`\n  ${t.verdict.words}\n  next: ${t.verdict.nextStep}\n`);
  const s = t.timings;
  console.log(
    table(
      ['STAGE', 'QUEUE WAIT', 'EXECUTION', 'DEFERRED'],
      [
        ['intake', '-', ms(s.intake.executionMs), '-'],
        ['claim', ms(s.claim.queueMs), '-', ms(s.claim.deferredMs)],
        ['side effects', ms(s.sideEffects.queueMs), ms(s.sideEffects.executionMs), '-'],
        ['completion', ms(s.completion.queueMs), ms(s.completion.executionMs), '-'],
      ],
    ),
  );
  if (t.duplicates.count > 0) console.log(`\nduplicate submissions: ${t.duplicates.count} (${t.duplicates.at.join(', ')})`);
  if (t.lineage.replayOf) console.log(`replay of: ${t.lineage.replayOf}`);
  if (t.lineage.replays.length > 0) console.log(`replayed as: ${t.lineage.replays.map((r: any) => `${r.jobId} (${r.status})`).join(', ')}`);
  if (t.trace) console.log(`trace: ${t.trace.url ?? t.trace.traceId}`);
  const tq = t.temporal;
  console.log(
    `temporal: workflow ${tq.workflowId}${tq.runId ? ` run ${tq.runId}` : ''}${tq.status ? ` ${tq.status}` : ''}${tq.taskQueue ? ` on ${tq.taskQueue}` : ''}${tq.note ? ` (${tq.note})` : ''}\n`,
  );
  console.log(
    table(
      ['AT (UTC)', 'SOURCE', 'KIND', 'EVENT', 'DETAIL'],
      t.events.map((e: any) => [e.at, e.source, e.kind, e.event, e.detail ?? '']),
    ),
  );
}

/** `list`'s flags as the admin API's query; `--state` may repeat. */
function listQuery(args: string[]): URLSearchParams {
  const q = new URLSearchParams();
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i]!;
    const param = LIST_FLAGS[flag];
    if (!param) throw new UsageError(`unknown option ${flag}`);
    const value = args[i + 1];
    if (value === undefined || value.startsWith('--')) throw new UsageError(`${flag} needs a value`);
    if (param !== 'state' && q.has(param)) throw new UsageError(`${flag} given twice`);
    q.append(param, value);
  }
  return q;
}

function printList(page: any, query: URLSearchParams): void {
  const rows = page.jobs.map((j: any) => [
    j.jobId,
    j.tenantId,
    j.type,
    j.status === 'scheduled' ? `scheduled for ${j.scheduledFor}` : j.status,
    String(j.attempts),
    j.createdAt,
  ]);
  console.log(rows.length ? table(['JOB', 'TENANT', 'TYPE', 'STATUS', 'ATTEMPTS', 'CREATED (UTC)'], rows) : 'no job matches');
  if (!page.nextCursor) return;
  // The next page: the same filter, this page's cursor (a cursor belongs to one filter).
  const next = [...query.entries()]
    .filter(([k]) => k !== 'cursor')
    .map(([k, v]) => `${Object.keys(LIST_FLAGS).find((f) => LIST_FLAGS[f] === k)} ${quote(v)}`);
  console.log(`\nnext page: npm run job -- list ${[...next, `--cursor ${page.nextCursor}`].join(' ')}`);
}

/** A value as a shell word: bare when it is plain, else single-quoted. */
const quote = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

async function run(argv: string[], api: Api): Promise<void> {
  const json = argv.includes('--json');
  const rest = argv.filter((a) => a !== '--json');
  const [command, ...args] = rest;
  if (command === 'help' || command === '--help' || command === undefined) return console.log(USAGE);
  if (command === 'list') {
    const query = listQuery(args);
    const page = await api('GET', `/v1/admin/jobs?${query}`);
    if (json) console.log(JSON.stringify(page, null, 2));
    else printList(page, query);
    return;
  }
  if (command !== 'timeline') throw new UsageError(`unknown command "${command}"`);
  const [jobId, ...extra] = args;
  if (!jobId || jobId.startsWith('--')) throw new UsageError('missing job ID');
  if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
  const body = await api('GET', `/v1/admin/jobs/${encodeURIComponent(jobId)}/timeline`);
  if (json) console.log(JSON.stringify(body, null, 2));
  else printTimeline(body);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  // The key is looked up at the first request, so a usage error is reported before a missing key.
  let api: Api | undefined;
  await run(argv, (method, path, body) => {
    if (!api) {
      const { apiUrl, adminKey } = adminApiFromEnv(defaultJobRegistry);
      api = createApi(apiUrl, adminKey);
    }
    return api(method, path, body);
  });
}

main().catch((err: Error) => {
  console.error(err instanceof UsageError ? `${err.message}\n\n${USAGE}` : `error: ${err.message}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
