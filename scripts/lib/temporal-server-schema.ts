// The Temporal server's two PostgreSQL databases (plugin postgres12): created and migrated with
// temporal-sql-tool, idempotently, and never left half-written under their real names.
import { execFile } from 'node:child_process';
import pg from 'pg';

export interface SqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Database to connect to for CREATE/ALTER DATABASE (the one DATABASE_URL names). */
  maintenanceDb: string;
  /** sslmode=require|verify-ca|verify-full in DATABASE_URL. */
  tls: boolean;
  verifyHost: boolean;
}

export function sqlTargetFromUrl(databaseUrl: string): SqlTarget {
  const u = new URL(databaseUrl);
  const sslmode = u.searchParams.get('sslmode') ?? '';
  return {
    host: u.hostname || '127.0.0.1',
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username || 'postgres'),
    password: decodeURIComponent(u.password),
    maintenanceDb: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
    tls: ['require', 'verify-ca', 'verify-full'].includes(sslmode),
    verifyHost: sslmode === 'verify-full',
  };
}

/**
 * What `update-schema` reaches with the schemas embedded in the v1.32.1 sql tool (v1.29.1's
 * were 1.18 and 1.9: a store set up by it is moved forward, never back).
 */
const SCHEMAS = {
  temporal: { schemaName: 'postgresql/v12/temporal', version: '1.19' },
  visibility: { schemaName: 'postgresql/v12/visibility', version: '1.14' },
} as const;

export interface TemporalDatabases {
  temporal: string;
  visibility: string;
}

/**
 * Creates and migrates both databases, idempotently. A database that does not exist yet is
 * built under a staging name and renamed when complete (ALTER DATABASE ... RENAME is atomic),
 * so an interrupted first setup never leaves a half-written schema under the real name: the
 * next run drops the staging database and starts over. An existing database is only moved
 * forward (`update-schema` applies the versions it lacks). An advisory lock serialises two
 * setups against one Postgres.
 */
export async function ensureTemporalSchemas(o: {
  sqlTool: string;
  target: SqlTarget;
  databases: TemporalDatabases;
  log: (m: string) => void;
}): Promise<void> {
  const { target, log } = o;
  const admin = new pg.Client({
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    database: target.maintenanceDb,
    ssl: target.tls ? { rejectUnauthorized: target.verifyHost } : undefined,
  });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    await admin.query(`SELECT pg_advisory_lock(hashtext('durable-jobs: temporal schema setup'))`);
    for (const kind of ['temporal', 'visibility'] as const) {
      const db = o.databases[kind];
      const want = SCHEMAS[kind];
      const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db])).rowCount === 1;
      if (exists) {
        const have = await schemaVersion(target, db);
        if (have === null && (await tableCount(target, db)) > 0) {
          throw new Error(
            `database ${db} has tables but no Temporal schema version: it is not a Temporal ${kind} store (or an interrupted in-place setup); drop it or choose another database name`,
          );
        }
        if (have === want.version) {
          log(`Temporal ${kind} schema: database ${db} is at version ${have}`);
          continue;
        }
        log(`Temporal ${kind} schema: database ${db} is at version ${have ?? 'none'}; updating to ${want.version}`);
        await runSqlTool(o.sqlTool, target, db, ['setup-schema', '-v', '0.0']);
        await runSqlTool(o.sqlTool, target, db, ['update-schema', '--schema-name', want.schemaName]);
      } else {
        const staging = `${db}__setup`;
        const started = Date.now();
        await admin.query(`DROP DATABASE IF EXISTS ${ident(staging)} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${ident(staging)}`);
        await runSqlTool(o.sqlTool, target, staging, ['setup-schema', '-v', '0.0']);
        await runSqlTool(o.sqlTool, target, staging, ['update-schema', '--schema-name', want.schemaName]);
        // The tool records the database it ran in; the server checks the record under its own name.
        await renameSchemaRecord(target, staging, db);
        await admin.query(`ALTER DATABASE ${ident(staging)} RENAME TO ${ident(db)}`);
        log(`Temporal ${kind} schema: created database ${db} at version ${want.version} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
      }
      const now = await schemaVersion(target, db);
      if (now !== want.version)
        throw new Error(`Temporal ${kind} schema in ${db} is at version ${now ?? 'none'} after the update, expected ${want.version}`);
    }
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function schemaVersion(t: SqlTarget, db: string): Promise<string | null> {
  const c = new pg.Client({
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: db,
    ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined,
  });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const r = await c.query<{ v: string }>(`SELECT curr_version AS v FROM schema_version WHERE version_partition = 0 AND db_name = $1`, [
      db,
    ]);
    return r.rows[0]?.v ?? null;
  } catch {
    return null; // no schema_version table: nothing set up yet
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function tableCount(t: SqlTarget, db: string): Promise<number> {
  const c = new pg.Client({
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: db,
    ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined,
  });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).rows[0]!.n;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function renameSchemaRecord(t: SqlTarget, staging: string, db: string): Promise<void> {
  const c = new pg.Client({
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: staging,
    ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined,
  });
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query('UPDATE schema_version SET db_name = $1 WHERE db_name = $2', [db, staging]);
  } finally {
    await c.end().catch(() => undefined);
  }
}

function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`database name "${name}" must be lower-case letters, digits and _`);
  return `"${name}"`;
}

/**
 * One sql-tool call. It runs in its own process group and without a parent-death signal: a
 * Ctrl-C or the death of this process lets the current call finish on its own (seconds),
 * rather than cutting a schema version in half. The password goes through SQL_PASSWORD, never argv.
 */
function runSqlTool(tool: string, t: SqlTarget, db: string, args: string[]): Promise<void> {
  const global = ['--plugin', 'postgres12', '--ep', t.host, '-p', String(t.port), '-u', t.user, '--db', db];
  if (t.tls) global.push('--tls', ...(t.verifyHost ? [] : ['--tls-disable-host-verification']));
  return new Promise((resolve, reject) => {
    execFile(
      tool,
      [...global, ...args],
      { env: { ...process.env, SQL_PASSWORD: t.password }, timeout: 120_000, maxBuffer: 8 << 20 },
      (err, stdout, stderr) => {
        if (!err) return resolve();
        const lines = redact(`${stdout}\n${stderr}`, t.password).trim().split('\n');
        const errors = lines.filter((l) => /ERROR|FATAL|error:/.test(l));
        const out = (errors.length > 0 ? errors : lines).slice(-8).join('\n');
        reject(new Error(`temporal-sql-tool ${args[0]} on database ${db} failed: ${out}`));
      },
    );
  });
}

/**
 * Hides a database password in output we print or keep. The embedded cluster's fixed password
 * `postgres` is no secret, and hiding it would mangle every `postgresql` in the output.
 */
export function redact(text: string, secret: string): string {
  return secret && secret !== 'postgres' ? text.split(secret).join('***') : text;
}
