/**
 * `durable-jobs pause <command>`: pauses by priority, job type, tenant or a tenant's type
 * (issue 38 §4), for operators. A thin client of the admin HTTP API (`DJ_API_URL`, admin key
 * `ADMIN_API_KEY`), so every change is checked, applied under the setting's lock and audited
 * under the operator's name by the API.
 *
 *   list                                          what is paused, since when, by whom
 *   add    [--priority P] [--tenant ID] [--type T] [--reason TEXT]
 *   resume [--priority P] [--tenant ID] [--type T] [--reason TEXT]   the ramp applies
 *
 * Every command takes `--json` (the API's JSON, unchanged) instead of the table.
 */
import { runAdminCli, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: durable-jobs pause <command> [--json]
  list                                                  what is paused, since when and by whom
  add    --priority P | [--tenant ID] [--type T]  [--reason TEXT]
                                                        pause a priority, a tenant, a job type, or a tenant's type:
                                                        jobs not started wait, started ones stop at their next step
  resume --priority P | [--tenant ID] [--type T]  [--reason TEXT]
                                                        lift that pause; held jobs resume at the recovery rate`;

const OPTIONS = { '--priority': 'priority', '--tenant': 'tenantId', '--type': 'jobType', '--reason': 'reason' } as const;

function parsePauseArgs(argv: string[]): { command: string; body: Record<string, string>; json: boolean } {
  const [command = 'help', ...rest] = argv;
  const body: Record<string, string> = {};
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--json') {
      json = true;
      continue;
    }
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const field = OPTIONS[flag as keyof typeof OPTIONS];
    if (!field) throw new UsageError(a.startsWith('--') ? `unknown option ${a}` : `unexpected argument ${a}`);
    const value = inline ?? rest[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    body[field] = value;
  }
  return { command, body, json };
}

const describeScope = (p: { tenantId?: string; jobType?: string }) =>
  p.tenantId !== undefined && p.jobType !== undefined
    ? `${p.jobType} jobs of tenant ${p.tenantId}`
    : p.jobType !== undefined
      ? `job type ${p.jobType}`
      : `tenant ${p.tenantId}`;

function printPauses(r: any): void {
  const rows: unknown[][] = [
    ...r.pausedPriorities.map((p: string) => [`priority ${p}`, r.pausedSince?.[p], null, null]),
    ...r.pausedScopes.map((p: any) => [describeScope(p), p.since, p.by, p.reason]),
  ];
  console.log(rows.length === 0 ? 'nothing is paused' : table(['PAUSED', 'SINCE (UTC)', 'BY', 'REASON'], rows));
  const deferred = Object.entries(r.deferredJobs ?? {}).map(([p, n]) => `${p} ${n}`);
  console.log(`deferred jobs: ${deferred.length ? deferred.join(', ') : 'none'}; recovery ${r.recoveryRatePerMinute}/min`);
}

async function run(argv: string[], api: () => Api): Promise<void> {
  const a = parsePauseArgs(argv);
  const out = (v: unknown) => (a.json ? console.log(JSON.stringify(v, null, 2)) : printPauses(v));
  switch (a.command) {
    case 'list':
      if (Object.keys(a.body).length > 0) throw new UsageError('list takes no options but --json');
      return out(await api()('GET', '/v1/admin/pauses'));
    case 'add':
    case 'resume':
      if (!a.body.priority && !a.body.tenantId && !a.body.jobType)
        throw new UsageError(`${a.command} needs --priority, or --tenant and/or --type`);
      return out(await api()('POST', a.command === 'add' ? '/v1/admin/pauses' : '/v1/admin/pauses/resume', a.body));
    case 'help':
    case '--help':
      return console.log(USAGE);
    default:
      throw new UsageError(`unknown command "${a.command}"`);
  }
}

runAdminCli(run, USAGE, defaultJobRegistry);
