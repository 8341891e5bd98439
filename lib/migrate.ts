import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { isConnectionError } from './db.js';

const PgClient = pg.Client;

const SCHEMA_DIR = fileURLToPath(new URL('../schema/', import.meta.url));
/** Any constant works; it only has to be the same for every migrator of this product. */
const MIGRATION_LOCK = 7_210_443_001;

export interface MigrateOptions {
  /** A direct connection for the session lock (behind PgBouncer in transaction mode). */
  directUrl?: string | undefined;
  /** Apply only the migrations numbered up to this one (`'0018'`): a schema as an older release left it (upgrade tests). Default all. */
  through?: string;
}

/**
 * Forward-only numbered `.sql` files, one transaction each. The advisory lock makes racing
 * migrators (two workers starting at once) take turns; the second sees the rows the first
 * recorded and applies nothing.
 *
 * The lock is a session lock held across several transactions, so it needs one server
 * session for the whole run: behind PgBouncer in transaction mode, pass `directUrl` (a
 * connection straight to Postgres, config `DATABASE_MIGRATION_URL`) and the migration runs
 * on a client of its own instead of a pooled one.
 */
export async function migrate(pool: pg.Pool, opts: MigrateOptions = {}): Promise<string[]> {
  // Compared as text with each file's four-digit number: '18' would sort after every file.
  if (opts.through !== undefined && !/^\d{4}$/.test(opts.through))
    throw new TypeError(`migrate: through must be a migration's four-digit number, such as '0018' (got ${JSON.stringify(opts.through)})`);
  const files = (await readdir(SCHEMA_DIR))
    .filter((f) => /^\d{4}_.+\.sql$/.test(f) && (opts.through === undefined || f.slice(0, 4) <= opts.through))
    .sort();
  const direct = opts.directUrl ? new PgClient({ connectionString: opts.directUrl }) : undefined;
  if (direct) await direct.connect();
  const client: pg.Client | pg.PoolClient = direct ?? (await pool.connect());
  const applied: string[] = [];
  // A checked-out client has no pool listener: a session ended meanwhile (a Postgres restart
  // while this waits for the lock) would emit an uncaught `error` and kill the process. The
  // failure reaches the caller through its query; the broken client is discarded.
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken ??= err;
  };
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(SCHEMA_DIR + file, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        await client.query(sql);
        await client.query('COMMIT');
        applied.push(file);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
      }
    }
  } catch (err) {
    if (!broken && isConnectionError(err)) broken = err as Error;
    throw err;
  } finally {
    if (!broken) await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    client.removeListener('error', onError);
    if (direct) await direct.end().catch(() => undefined);
    else (client as pg.PoolClient).release(broken);
  }
  return applied;
}
