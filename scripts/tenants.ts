/**
 * `npm run tenants -- <command>`: tenants and their API keys, for operators. A thin client of
 * the admin HTTP API (`DJ_API_URL`, default http://127.0.0.1:$HTTP_PORT; admin key
 * `ADMIN_API_KEY`), so every change is made, checked and recorded by the API.
 *
 *   create ID
 *   list
 *   add-key ID --name NAME       prints the new key: the only time it is ever shown
 *   revoke-key ID NAME           the key answers 401 from the next request on
 *   set-webhook ID URL           the completion webhook; prints its signing secret, once
 *   remove-webhook ID
 *
 * Every command takes `--json` (the API's JSON, unchanged) instead of the table.
 */
import { runAdminCli, table, UsageError, type Api } from './lib/admin-api.js';
import { defaultJobRegistry } from '../jobs/index.js';

const USAGE = `usage: npm run tenants -- <command> [--json]
  create ID                  a tenant with no keys yet
  list                       every tenant and its keys (names, prefixes, last use; never a key)
  add-key ID --name NAME     a new key for the tenant, printed once: store it now
  revoke-key ID NAME         revoke the tenant's live key of that name
  set-webhook ID URL         set (or replace) the tenant's completion webhook; its signing secret is printed once
  remove-webhook ID          remove the tenant's completion webhook`;

function parseArgs(argv: string[]): { command: string; positional: string[]; json: boolean; name: string | undefined } {
  const [command = 'help', ...rest] = argv;
  const positional: string[] = [];
  let json = false;
  let name: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--json') json = true;
    else if (a === '--name' || a.startsWith('--name=')) {
      name = a === '--name' ? rest[++i] : a.slice('--name='.length);
      if (name === undefined) throw new UsageError('--name needs a value');
    } else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
    else positional.push(a);
  }
  return { command, positional, json, name };
}

/** Exactly `n` positional arguments, named by `what` for the message. */
function args(positional: string[], ...what: string[]): string[] {
  if (positional.length < what.length) throw new UsageError(`missing ${what[positional.length]}`);
  if (positional.length > what.length) throw new UsageError(`unexpected argument ${positional[what.length]}`);
  return positional;
}

const path = (id: string) => `/v1/admin/tenants/${encodeURIComponent(id)}`;

async function run(argv: string[], api: () => Api): Promise<void> {
  const a = parseArgs(argv);
  const out = (v: unknown, pretty: () => void) => (a.json ? console.log(JSON.stringify(v, null, 2)) : pretty());
  switch (a.command) {
    case 'create': {
      const [id] = args(a.positional, 'tenant ID') as [string];
      const t = await api()('POST', '/v1/admin/tenants', { id });
      return out(t, () => console.log(`tenant ${t.id} created; give it a key: npm run tenants -- add-key ${t.id} --name NAME`));
    }
    case 'list': {
      args(a.positional);
      const r = await api()('GET', '/v1/admin/tenants');
      const rows = r.tenants.flatMap((t: any) =>
        t.keys.length === 0
          ? [[t.id, null, null, null, null, null, null]]
          : t.keys.map((k: any) => [t.id, k.name, k.prefix, k.revokedAt ? 'revoked' : 'live', k.createdAt, k.lastUsedAt, k.revokedAt]),
      );
      return out(r, () =>
        console.log(
          r.tenants.length === 0
            ? 'no tenants'
            : table(['TENANT', 'KEY', 'PREFIX', 'STATE', 'CREATED (UTC)', 'LAST USED (UTC)', 'REVOKED (UTC)'], rows),
        ),
      );
    }
    case 'add-key': {
      const [id] = args(a.positional, 'tenant ID') as [string];
      if (!a.name) throw new UsageError('add-key needs --name NAME (what the key is for: ci, billing-service, ...)');
      const k = await api()('POST', `${path(id)}/keys`, { name: a.name });
      return out(k, () => {
        console.log(k.key);
        console.error(`key "${k.name}" of tenant ${k.tenantId} (prefix ${k.prefix}): shown this once, store it now`);
      });
    }
    case 'revoke-key': {
      const [id, name] = args(a.positional, 'tenant ID', 'key name') as [string, string];
      const k = await api()('DELETE', `${path(id)}/keys/${encodeURIComponent(name)}`);
      return out(k, () => console.log(`key "${k.name}" of tenant ${k.tenantId} revoked at ${k.revokedAt}`));
    }
    case 'set-webhook': {
      const [id, url] = args(a.positional, 'tenant ID', 'URL') as [string, string];
      const w = await api()('PUT', `${path(id)}/completion-webhook`, { url });
      return out(w, () => {
        console.log(w.secret);
        console.error(
          `completion webhook of tenant ${w.tenantId}: ${w.url}; its signing secret is shown this once, give it to the receiver now`,
        );
      });
    }
    case 'remove-webhook': {
      const [id] = args(a.positional, 'tenant ID') as [string];
      await api()('DELETE', `${path(id)}/completion-webhook`);
      return out({ tenantId: id, removed: true }, () => console.log(`completion webhook of tenant ${id} removed`));
    }
    case 'help':
    case '--help':
      return console.log(USAGE);
    default:
      throw new UsageError(`unknown command "${a.command}"`);
  }
}

runAdminCli(run, USAGE, defaultJobRegistry);
