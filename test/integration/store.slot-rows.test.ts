// A concurrency slot's rows (schema/0019_hot_slots.sql, store/concurrency.ts): the lease names
// the slots it holds, freeing and renewing go through that list, and taking and freeing a slot
// writes no index entry (heap-only updates); a lease that expired and was taken over frees and
// renews nothing of its successor's; leases held when the migration runs name their slots too.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { forgetEnsuredSlots, releaseSlot, renewSlots, tryAcquireSlot, type SlotRequest } from '../../store/concurrency.js';
import { createTestDatabase } from '../support/harness.js';

const log = createLogger('test', 'silent');
let pool: pg.Pool;
let dbUrl: string;

beforeAll(async () => {
  dbUrl = await createTestDatabase('slot_rows');
  pool = createPool(dbUrl, log, 4);
  await migrate(pool);
});
afterAll(async () => {
  await pool?.end();
});

const slot = (holder: string, over: Partial<SlotRequest> = {}): SlotRequest => ({
  jobType: 'summarize',
  tenantId: 'tenant-a',
  holder,
  perTenant: 3,
  global: 5,
  total: 8,
  ttlMs: 15_000,
  ...over,
});

type SlotRow = { scope: string; n: number; lease_id: string | null; expires_at: Date | null };
const slotsOf = async (leaseId: string): Promise<SlotRow[]> =>
  (
    await pool.query<SlotRow>('SELECT scope, n, lease_id::text, expires_at FROM concurrency_slots WHERE lease_id = $1 ORDER BY scope', [
      leaseId,
    ])
  ).rows;
const lease = async (id: string) =>
  (
    await pool.query<{ slot_scopes: string[] | null; slot_ns: number[] | null; expires_at: Date }>(
      'SELECT slot_scopes, slot_ns, expires_at FROM concurrency_leases WHERE id = $1',
      [id],
    )
  ).rows[0];

describe("a concurrency slot's rows", () => {
  it('the lease names its slots, and freeing it frees those and no other', async () => {
    const a = (await tryAcquireSlot(pool, slot('a')))!;
    const b = (await tryAcquireSlot(pool, slot('b')))!;
    const held = await slotsOf(a);
    expect(held.map((s) => s.scope)).toEqual(['all', 'type:summarize', 'type:summarize:tenant:tenant-a']);
    const l = await lease(a);
    expect(l?.slot_scopes).toEqual(held.map((s) => s.scope));
    expect(l?.slot_ns).toEqual(held.map((s) => s.n));

    await releaseSlot(pool, a);
    expect(await lease(a)).toBeUndefined();
    expect(await slotsOf(a)).toEqual([]);
    for (const s of held) {
      const row = (
        await pool.query<SlotRow>('SELECT lease_id, expires_at FROM concurrency_slots WHERE scope = $1 AND n = $2', [s.scope, s.n])
      ).rows[0];
      expect(row).toEqual({ lease_id: null, expires_at: null });
    }
    expect(await slotsOf(b)).toHaveLength(3);
    await releaseSlot(pool, b);
  });

  it('taking and freeing a slot writes no index entry: every update of a slot row is heap-only', async () => {
    const indexes = await pool.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'concurrency_slots'`);
    expect(indexes.rows.map((r) => r.indexname)).toEqual(['concurrency_slots_pkey']);
    // A session of its own: its statistics not yet reported are its own transaction's only.
    const own = new pg.Pool({ connectionString: dbUrl, max: 1 });
    const client = await own.connect();
    try {
      // The counts of the current transaction: nothing else's updates, no statistics delay.
      await client.query('BEGIN');
      for (let i = 0; i < 10; i++) await releaseSlot(client, (await tryAcquireSlot(client, slot(`hot-${i}`)))!);
      const st = await client.query<{ upd: string; hot: string }>(
        `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relname = 'concurrency_slots'`,
      );
      await client.query('COMMIT');
      // 10 acquisitions and 10 releases, three scopes each.
      expect(st.rows[0]).toEqual({ upd: '60', hot: '60' });
    } finally {
      client.release();
      await own.end();
    }
  });

  it('renewal extends the slots a lease still holds; a lease taken over frees and renews nothing of its successor', async () => {
    const one = { perTenant: 1, global: 1, total: undefined, tenantId: 'tenant-renew', jobType: 'renewed' };
    const old = (await tryAcquireSlot(pool, slot('old', one)))!;
    // The old holder's worker died: its lease and slots expired.
    await pool.query(`UPDATE concurrency_slots SET expires_at = now() - interval '1 second' WHERE lease_id = $1`, [old]);
    const next = (await tryAcquireSlot(pool, slot('next', one)))!;
    expect(next).not.toBeNull();
    expect(await lease(old)).toBeUndefined(); // taken over: the expired lease row is deleted
    const before = await slotsOf(next);
    expect(before).toHaveLength(2);

    await renewSlots(pool, [old, next], 60_000);
    const after = await slotsOf(next);
    expect(after).toHaveLength(2);
    const renewed = (await lease(next))!.expires_at.getTime();
    for (const [i, s] of after.entries()) {
      expect(s.expires_at!.getTime()).toBe(renewed);
      expect(s.expires_at!.getTime()).toBeGreaterThan(before[i]!.expires_at!.getTime());
    }
    // The dead holder's late release frees nothing of the successor's.
    await releaseSlot(pool, old);
    expect(await slotsOf(next)).toHaveLength(2);
    await releaseSlot(pool, next);
    expect(await slotsOf(next)).toEqual([]);
  });

  it('a lease held when the migration runs names its slots, so the new statements free it', async () => {
    const url = await createTestDatabase('slot_rows_upgrade');
    const old = createPool(url, log, 2);
    try {
      // A number migrate cannot compare is refused before anything is applied.
      await expect(migrate(old, { through: '18' })).rejects.toThrow(/four-digit number, such as '0018' \(got "18"\)/);
      expect((await old.query(`SELECT to_regclass('schema_migrations') AS t`)).rows[0].t).toBeNull();
      // The schema as it was before 0019, and a lease taken the old way.
      await migrate(old, { through: '0018' });
      await old.query(
        `INSERT INTO concurrency_slots (scope, n) SELECT s, g FROM unnest(ARRAY['type:x', 'type:x:tenant:t']) s, generate_series(1, 2) g`,
      );
      const id = (
        await old.query<{ id: string }>(
          `INSERT INTO concurrency_leases (job_type, tenant_id, holder, expires_at) VALUES ('x', 't', 'h', now() + interval '1 minute') RETURNING id::text`,
        )
      ).rows[0]!.id;
      await old.query(`UPDATE concurrency_slots SET lease_id = $1, expires_at = now() + interval '1 minute' WHERE n = 2`, [id]);

      expect(await migrate(old, { through: '0019' })).toEqual(['0019_hot_slots.sql']);
      const named = (await old.query('SELECT slot_scopes, slot_ns FROM concurrency_leases WHERE id = $1', [id])).rows[0];
      expect(named).toEqual({ slot_scopes: ['type:x', 'type:x:tenant:t'], slot_ns: [2, 2] });
      forgetEnsuredSlots();
      await releaseSlot(old, id);
      expect((await old.query('SELECT count(*)::int AS n FROM concurrency_slots WHERE lease_id IS NOT NULL')).rows[0].n).toBe(0);
      const ff = await old.query<{ reloptions: string[] }>(`SELECT reloptions FROM pg_class WHERE relname = 'concurrency_slots'`);
      expect(ff.rows[0]!.reloptions).toEqual(['fillfactor=50']);
    } finally {
      await old.end();
    }
  });
});
