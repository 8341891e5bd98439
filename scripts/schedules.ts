/**
 * `durable-jobs schedules <command>`: the scheduled job types' Temporal Schedules (issue 38 §8),
 * for operators. A thin client of the admin HTTP API (`DJ_API_URL`, admin key `ADMIN_API_KEY`),
 * so every action is checked, bounded and audited under the operator's name by the API.
 *
 *   list                                            each type's Schedule: state, next and last runs
 *   windows NAME [--from ISO] [--to ISO]            its windows: filled, late-filled, skipped (why), missed, due
 *   pause | unpause NAME --reason TEXT              audited
 *   trigger NAME [--reason TEXT]                    the current window's jobs start (or are found)
 *   backfill NAME --from ISO --to ISO [--reason T]  the windows matched in [from, to), at most 100
 *
 * Every command takes `--json` (the API's JSON, unchanged) instead of the table.
 */
import { runAdminCli, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: durable-jobs schedules <command> [--json]
  list                                              each scheduled type's Schedule: state, next and last runs
  windows  NAME [--from ISO] [--to ISO]             its windows and their state (default the last 14)
  pause    NAME --reason TEXT                       pause its Schedule (audited)
  unpause  NAME --reason TEXT                       unpause it (audited)
  trigger  NAME [--reason TEXT]                     fire it now: the current window's jobs start
  backfill NAME --from ISO --to ISO [--reason TEXT] run the windows it matches in [from, to) (at most 100)`;

const OPTIONS = { '--reason': 'reason', '--from': 'from', '--to': 'to' } as const;

function parseArgs(argv: string[]): { command: string; name?: string; body: Record<string, string>; json: boolean } {
  const [command = 'help', ...rest] = argv;
  const body: Record<string, string> = {};
  let name: string | undefined;
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--json') json = true;
    else if (!a.startsWith('--') && name === undefined) name = a;
    else {
      const field = OPTIONS[a as keyof typeof OPTIONS];
      if (!field) throw new UsageError(a.startsWith('--') ? `unknown option ${a}` : `unexpected argument ${a}`);
      const value = rest[++i];
      if (value === undefined) throw new UsageError(`${a} needs a value`);
      body[field] = value;
    }
  }
  return { command, name, body, json };
}

function print(command: string, r: any): void {
  if (command === 'list')
    return console.log(
      table(
        ['TYPE', 'STATE', 'NEXT RUN (UTC)', 'LAST RUN (UTC)', 'NOTE'],
        r.items.map((s: any) => [
          s.name,
          !s.state.exists ? 'absent' : s.state.paused ? 'paused' : 'active',
          s.state.nextActionTimes?.[0],
          s.state.recentActions?.[0]?.scheduledAt,
          s.state.note,
        ]),
      ),
    );
  if (command === 'windows')
    return console.log(
      table(
        ['WINDOW (UTC)', 'STATE', 'JOBS', 'WHY'],
        r.windows.map((w: any) => [w.start, w.state, w.jobs, w.reason]),
      ),
    );
  if (command === 'backfill') return console.log(`backfill started: ${r.windows.length} window(s) of ${r.scheduleId}`);
  if (command === 'trigger') return console.log(`triggered ${r.scheduleId}: window ${r.window.start}, job(s) ${r.jobIds.join(', ')}`);
  console.log(`${r.name}: ${r.state.paused ? 'paused' : 'active'}${r.state.note ? ` (${r.state.note})` : ''}`);
}

async function run(argv: string[], api: () => Api): Promise<void> {
  const a = parseArgs(argv);
  const out = (v: unknown) => (a.json ? console.log(JSON.stringify(v, null, 2)) : print(a.command, v));
  if (a.command === 'help' || a.command === '--help') return console.log(USAGE);
  if (a.command === 'list') return out(await api()('GET', '/v1/admin/schedules'));
  if (!['windows', 'pause', 'unpause', 'trigger', 'backfill'].includes(a.command)) throw new UsageError(`unknown command "${a.command}"`);
  if (!a.name) throw new UsageError(`${a.command} needs the scheduled job type's name`);
  const path = `/v1/admin/schedules/${encodeURIComponent(a.name)}`;
  if (a.command === 'windows') return out(await api()('GET', `${path}/windows?${new URLSearchParams(a.body).toString()}`));
  return out(await api()('POST', `${path}/${a.command}`, a.body));
}

runAdminCli(run, USAGE, defaultJobRegistry);
