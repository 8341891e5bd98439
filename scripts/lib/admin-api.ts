/**
 * What the operator CLIs (`dlq`, `tenants`, `job`) share: the admin API over HTTP with the
 * operator's key, answers turned into one-line errors, and a plain aligned table.
 */
import { loadConfig } from '../../lib/config.js';

/** Bad arguments: the CLI prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

export type Api = (method: string, path: string, body?: unknown) => Promise<any>;

/** One request to the API; a problem answer becomes `<status> <title>: <detail> (<field errors>)`. */
export function createApi(baseUrl: string, adminKey: string): Api {
  return async (method, path, body) => {
    let res: Response;
    try {
      res = await fetch(baseUrl + path, {
        method,
        // The key names the operator for the audit trail (ADMIN_API_KEYS); no X-Operator.
        headers: { authorization: `Bearer ${adminKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(`cannot reach the API at ${baseUrl} (${(err as Error).message}); is \`npm start\` running? (DJ_API_URL)`);
    }
    const text = await res.text();
    const json = text ? JSON.parse(text) : undefined;
    if (res.status >= 400) {
      const p = json ?? {};
      throw new Error(
        `${res.status} ${p.title ?? 'error'}${p.detail ? `: ${p.detail}` : ''}${p.errors ? ` (${p.errors.map((e: { path: string; message: string }) => `${e.path}: ${e.message}`).join('; ')})` : ''}`,
      );
    }
    return json;
  };
}

/**
 * The API's URL and the operator's key from the environment (`DJ_API_URL`, `ADMIN_API_KEY`);
 * against the local stack (`npm start`, dev mode) the admin key has a known default.
 */
export function adminApiFromEnv(jobs: { names: readonly string[]; fastPathTypes: readonly string[] }): {
  apiUrl: string;
  adminKey: string;
} {
  const types = { jobTypes: jobs.names, fastPathTypes: jobs.fastPathTypes };
  const config = loadConfig(process.env, types);
  const local = /^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(`${config.apiUrl}/`);
  const adminKey = config.adminApiKey ?? (local ? loadConfig(process.env, { ...types, mode: 'dev' }).adminApiKey : undefined);
  if (!adminKey) throw new UsageError("set ADMIN_API_KEY to the API's admin key");
  return { apiUrl: config.apiUrl, adminKey };
}

/** A plain aligned table: readable in any terminal, no dependency. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/**
 * Runs an operator CLI (`tenants`, `pause`, `bulk`): its `run` gets the arguments and the admin
 * API of the environment, made at its first request (so a usage error comes before a missing
 * key). A usage error prints the message and the usage and exits 2; any other error exits 1.
 */
export function runAdminCli(
  run: (argv: string[], api: () => Api) => Promise<void>,
  usage: string,
  jobs: Parameters<typeof adminApiFromEnv>[0],
): void {
  const api = (): Api => {
    const { apiUrl, adminKey } = adminApiFromEnv(jobs);
    return createApi(apiUrl, adminKey);
  };
  run(process.argv.slice(2), api).catch((err: Error) => {
    console.error(err instanceof UsageError ? `${err.message}\n\n${usage}` : `error: ${err.message}`);
    process.exit(err instanceof UsageError ? 2 : 1);
  });
}
