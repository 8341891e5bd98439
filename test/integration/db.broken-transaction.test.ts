// A Postgres session that ends while a transaction holds its pooled client (what a Postgres
// restart does to a worker polling for a concurrency slot) must fail that transaction, not
// the process: drill item 10 lost both worker processes to an uncaught client `error`.
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createPool, isConnectionError, withTransaction } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { tryAcquireSlot } from '../../store/concurrency.js';
import { createTestDatabase } from '../support/harness.js';

let url: string;
let pool: pg.Pool;
let admin: pg.Client;
const uncaught: Error[] = [];
let sawUncaught: () => void = () => undefined;
const onUncaught = (err: Error) => {
  uncaught.push(err);
  sawUncaught();
};

beforeAll(async () => {
  url = await createTestDatabase('broken_tx', inject('databaseUrl'));
  pool = createPool(url, createLogger('test', 'silent'), 2);
  await migrate(pool);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  process.on('uncaughtException', onUncaught);
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await admin?.end();
  await pool?.end();
});

/** Ends the session of `tx` from outside and waits until the client has seen it go (or it blew up uncaught). */
async function terminate(tx: pg.PoolClient): Promise<void> {
  const { pid } = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
  const ended = new Promise<void>((resolve) => {
    tx.once('end', resolve);
    sawUncaught = resolve;
  });
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  await ended;
}

describe('withTransaction when its Postgres session ends', () => {
  beforeEach(() => {
    uncaught.length = 0;
  });

  it('rejects with a connection error, throws nothing uncaught, and the pool serves the next call', async () => {
    const err = await withTransaction(pool, async (tx) => {
      await terminate(tx);
      await tx.query('SELECT 1');
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(uncaught.map((e) => e.message)).toEqual([]);
    expect((await pool.query<{ x: number }>('SELECT 1 AS x')).rows[0]!.x).toBe(1);
    // The broken client was discarded: every pooled client works (max 2), inside transactions too.
    const both = await Promise.all(
      [0, 1].map(() => withTransaction(pool, async (tx) => (await tx.query<{ x: number }>('SELECT 2 AS x')).rows[0]!.x)),
    );
    expect(both).toEqual([2, 2]);
  });

  it('a slot acquisition whose session ends mid-query fails as a connection error, and the next one takes the slot', async () => {
    const req = { jobType: `t-${Date.now()}`, tenantId: 'a', holder: 'h', perTenant: 1, global: 1, ttlMs: 15_000 };
    // Lock the slot table so the acquisition blocks inside its statement, then end its session.
    // (Acquirers take no lock of their own any more: slot rows are taken with SKIP LOCKED.)
    const blocker = await pool.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE concurrency_slots IN ACCESS EXCLUSIVE MODE');
    const waiting = tryAcquireSlot(pool, req).then(
      () => undefined,
      (e: unknown) => e,
    );
    const { pid } = await pollFor(
      async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%concurrency_slots%'`,
          )
        ).rows[0],
    );
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await waiting;
    expect(isConnectionError(err), String(err)).toBe(true);
    await blocker.query('ROLLBACK');
    blocker.release();
    expect(uncaught.map((e) => e.message)).toEqual([]);
    expect(await tryAcquireSlot(pool, req)).toMatch(/^\d+$/);
  });
});

describe('migrate when its Postgres session ends', () => {
  beforeEach(() => {
    uncaught.length = 0;
  });

  it('rejects with a connection error, throws nothing uncaught, and the next migrate runs', async () => {
    // Another migrator holds the migration lock, so this one waits inside its checked-out client.
    const blocker = await pool.connect();
    await blocker.query('SELECT pg_advisory_lock(7210443001)');
    const waiting = migrate(pool).then(
      () => undefined,
      (e: unknown) => e,
    );
    const { pid } = await pollFor(
      async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock(%' AND pid <> pg_backend_pid()`,
          )
        ).rows[0],
    );
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await waiting;
    expect(isConnectionError(err), String(err)).toBe(true);
    await blocker.query('SELECT pg_advisory_unlock(7210443001)');
    blocker.release();
    // Give a late client `error` (the socket closing after the failed query) its turn to surface.
    await new Promise((r) => setTimeout(r, 200));
    expect(uncaught.map((e) => e.message)).toEqual([]);
    // The broken client was discarded: the next migrate and every pooled client (max 2) work.
    expect(await migrate(pool)).toEqual([]);
    const both = await Promise.all(
      [0, 1].map(() => withTransaction(pool, async (tx) => (await tx.query<{ x: number }>('SELECT 3 AS x')).rows[0]!.x)),
    );
    expect(both).toEqual([3, 3]);
  });
});

async function pollFor<T>(fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting for the blocked acquisition');
    await new Promise((r) => setTimeout(r, 50));
  }
}
