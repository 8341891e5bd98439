/**
 * `durable-jobs bulk <command>`: bulk actions, reruns and failure clusters, for operators. A thin
 * client of the admin HTTP API (`DJ_API_URL`, `ADMIN_API_KEY`), so every action is checked and
 * audited by the API under the key's operator.
 *
 *   preview ACTION [filter]          what ACTION would touch (the API's dry run); nothing changes
 *   start ACTION [filter]            starts it; prints the bulk action's ID
 *   list | show ID                   bulk actions, newest first; one with its progress and audit
 *   pause ID | resume ID | stop ID [--reason TEXT]
 *   rerun JOB_ID [--from-step STEP] [--dry-run]
 *   clusters [--tenant T] [--type T] open dead letters grouped by failure signature
 *
 * Filter options: --ids A,B,C | --state S[,S] --type T --tenant T --created-after ISO
 * --created-before ISO --tag key:value (jobs) | --cluster cl-… --signature sig-… --error-class C
 * (dead letters); --limit N (refused above it), --rate N (per minute), --concurrency N,
 * --batch-size N, --reason TEXT, --from-step STEP (rerun). Every command takes `--json`.
 */
import { runAdminCli, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: durable-jobs bulk <command> [options] [--json]
  preview ACTION [filter]     ACTION: cancel, rerun, discard, retry-now, replay; nothing changes
  start ACTION [filter]       starts the bulk action (preview it first)
  list | show ID              bulk actions; one with its progress and audit rows
  pause ID | resume ID | stop ID [--reason TEXT]
  rerun JOB_ID [--from-step STEP] [--dry-run]
  clusters [--tenant T] [--type T]
filter: --ids A,B | --state S --type T --tenant T --created-after ISO --created-before ISO --tag k:v
        | --cluster cl-… --signature sig-… --error-class C;  --limit N --rate N --concurrency N
        --batch-size N --reason TEXT --from-step STEP`;

const VALUE_OPTIONS: Record<string, string> = {
  '--ids': 'ids',
  '--state': 'state',
  '--type': 'type',
  '--tenant': 'tenantId',
  '--created-after': 'createdAfter',
  '--created-before': 'createdBefore',
  '--tag': 'tag',
  '--cluster': 'cluster',
  '--signature': 'signature',
  '--error-class': 'errorClass',
  '--limit': 'limit',
  '--rate': 'ratePerMinute',
  '--concurrency': 'concurrency',
  '--batch-size': 'batchSize',
  '--reason': 'reason',
  '--from-step': 'fromStep',
};
const NUMBERS = new Set(['limit', 'ratePerMinute', 'concurrency', 'batchSize']);
const FILTER_KEYS = new Set(['state', 'type', 'tenantId', 'createdAfter', 'createdBefore', 'tag', 'cluster', 'signature', 'errorClass']);

function parseBulkArgs(argv: string[]): {
  command: string;
  positional: string[];
  json: boolean;
  dryRun: boolean;
  o: Record<string, string>;
} {
  const [command = 'help', ...rest] = argv;
  const positional: string[] = [];
  const o: Record<string, string> = {};
  let json = false;
  let dryRun = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    if (a === '--json') json = true;
    else if (a === '--dry-run') dryRun = true;
    else if (VALUE_OPTIONS[flag!]) {
      const v = inline ?? rest[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      o[VALUE_OPTIONS[flag!]!] = v;
    } else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
    else positional.push(a);
  }
  return { command, positional, json, dryRun, o };
}

/** The request body of `POST /v1/admin/bulk-actions` from the options; the API validates it. */
function bulkBody(action: string, o: Record<string, string>, dryRun: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { action, ...(dryRun ? { dryRun: true } : {}) };
  const filter: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'ids') body.ids = v.split(',').filter(Boolean);
    else if (FILTER_KEYS.has(k)) filter[k] = k === 'state' ? v.split(',') : v;
    else body[k] = NUMBERS.has(k) ? Number(v) : v;
  }
  if (!body.ids) body.filter = filter;
  return body;
}

const one = (positional: string[], what: string): string => {
  if (positional.length !== 1) throw new UsageError(positional.length === 0 ? `missing ${what}` : `unexpected argument ${positional[1]}`);
  return positional[0]!;
};

async function run(argv: string[], api: () => Api): Promise<void> {
  const a = parseBulkArgs(argv);
  const out = (v: unknown, pretty: () => void) => (a.json ? console.log(JSON.stringify(v, null, 2)) : pretty());
  const base = '/v1/admin/bulk-actions';
  switch (a.command) {
    case 'preview':
    case 'start': {
      const action = one(a.positional, 'ACTION');
      const r = await api()('POST', base, bulkBody(action, a.o, a.command === 'preview'));
      return out(r, () => {
        if (r.dryRun && r.groups) {
          console.log(`${action}: ${r.count} target(s) (limit ${r.limit})`);
          console.log(
            table(
              ['TENANT', 'TYPE', 'COUNT'],
              r.groups.map((g: any) => [g.tenantId, g.jobType, g.count]),
            ),
          );
          for (const p of r.reruns ?? [])
            console.log(
              `${p.jobId} -> ${p.rerunJobId ?? '-'}: ${(p.effects ?? []).map((e: any) => `${e.step} ${e.action}`).join(', ') || p.refused}`,
            );
        } else if (r.dryRun) console.log(`${action}: ${r.count} dead letter(s) would be replayed`);
        else
          console.log(
            `${r.bulkId ?? r.replayId} started: ${action} of ${r.count}; follow it with: durable-jobs bulk show ${r.bulkId ?? ''}`,
          );
      });
    }
    case 'list': {
      const r = await api()('GET', base);
      return out(r, () =>
        console.log(
          table(
            ['ID', 'ACTION', 'STATE', 'BY', 'TOTAL', 'APPLIED', 'SKIPPED', 'FAILED', 'CREATED (UTC)'],
            r.bulkActions.map((b: any) => [
              b.bulkId,
              b.action,
              b.state,
              b.requestedBy,
              b.counts.total,
              b.counts.applied,
              b.counts.skipped,
              b.counts.failed,
              b.createdAt,
            ]),
          ),
        ),
      );
    }
    case 'show': {
      const r = await api()('GET', `${base}/${encodeURIComponent(one(a.positional, 'ID'))}`);
      return out(r, () => {
        const c = r.progress ?? r.counts;
        console.log(
          `${r.bulkId}: ${r.action} ${r.state}, requested by ${r.requestedBy}; ${JSON.stringify(c)}${r.stopReason ? `; ${r.stopReason}` : ''}`,
        );
        for (const cmd of r.commands) console.log(`  ${cmd.at} ${cmd.command} by ${cmd.actor}`);
      });
    }
    case 'pause':
    case 'resume':
    case 'stop': {
      const id = one(a.positional, 'ID');
      const r = await api()(
        'POST',
        `${base}/${encodeURIComponent(id)}/${a.command}`,
        a.command === 'stop' && a.o.reason ? { reason: a.o.reason } : {},
      );
      return out(r, () => console.log(`${id}: ${a.command} accepted`));
    }
    case 'rerun': {
      const jobId = one(a.positional, 'JOB_ID');
      const r = await api()('POST', `/v1/admin/jobs/${encodeURIComponent(jobId)}/rerun`, {
        ...(a.o.fromStep ? { fromStep: a.o.fromStep } : {}),
        ...(a.dryRun ? { dryRun: true } : {}),
      });
      return out(r, () => {
        console.log(`${a.dryRun ? 'would rerun' : 'rerun'} ${jobId} as ${r.rerunJobId}${r.fromStep ? ` from ${r.fromStep}` : ''}`);
        console.log(
          table(
            ['STEP', 'ACTION', 'ORIGINAL'],
            r.effects.map((e: any) => [e.step, e.action, e.original.state]),
          ),
        );
      });
    }
    case 'clusters': {
      const q = new URLSearchParams({ ...(a.o.tenantId ? { tenantId: a.o.tenantId } : {}), ...(a.o.type ? { type: a.o.type } : {}) });
      const r = await api()('GET', `/v1/admin/dead-letters/clusters${q.size ? `?${q}` : ''}`);
      return out(r, () =>
        console.log(
          table(
            ['CLUSTER', 'COUNT', 'TENANT', 'TYPE', 'CLASS', 'STATUS', 'MESSAGE', 'LAST SEEN (UTC)'],
            r.clusters.map((c: any) => [
              c.clusterId,
              c.count,
              c.tenantId,
              c.jobType,
              c.errorClass,
              c.statusCode,
              c.message.slice(0, 60),
              c.lastSeen,
            ]),
          ),
        ),
      );
    }
    case 'help':
    case '--help':
      return console.log(USAGE);
    default:
      throw new UsageError(`unknown command "${a.command}"`);
  }
}

runAdminCli(run, USAGE, defaultJobRegistry);
