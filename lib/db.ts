import pg from 'pg';
import { UnavailableError } from './errors.js';
import type { Logger } from './logger.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** What a store function runs on: the pool, or a client inside a transaction. */
export type Db = pg.Pool | pg.PoolClient;

/** The rows of one statement: the read shape most store functions share. */
export async function queryRows<T extends pg.QueryResultRow>(db: Db, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await db.query<T>(sql, params)).rows;
}

/**
 * A pool that survives a Postgres restart: idle clients emit 57P01 errors when the server
 * goes away, and without this handler the process would crash. The next query reconnects.
 */
export function createPool(connectionString: string, log: Logger, max = 10): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // A query that hangs on a dead server must fail so that the caller can answer 503 or retry.
    query_timeout: 15_000,
  });
  pool.on('error', (err) =>
    log.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'idle postgres client failed; it will be replaced'),
  );
  return pool;
}

/**
 * Runs `fn` in a transaction on one pooled client. While a client is checked out the pool's
 * idle error listener is off, and a connection that breaks meanwhile (a Postgres restart
 * terminating the session) makes the client emit `error`: with no listener that is an
 * uncaught exception, and the worker process dies with every attempt it holds. So the
 * transaction listens itself; the caller sees the failure through its query (a connection
 * error), and the broken client is discarded, not returned to the pool.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken ??= err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (!broken && isConnectionError(err)) broken = err as Error;
    if (!broken) await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** Errors that mean "Postgres is not reachable right now", as opposed to a bad query. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && /^(08|57P0|53300)/.test(e.code)) return true;
  if (e?.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(e.code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout/i.test(e?.message ?? '');
}

/** Default `Retry-After` (seconds) when Postgres or Temporal cannot take a request. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * Runs a Postgres call for a request, turning "Postgres is unreachable" into a 503 that
 * says so (`UnavailableError`, dependency `postgres`); every other error passes through.
 */
export async function pgOr503<T>(
  fn: () => Promise<T>,
  message = 'Postgres is not reachable',
  retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isConnectionError(err)) throw new UnavailableError(message, retryAfterSeconds, { dependency: 'postgres', cause: err });
    throw err;
  }
}
