// The effect's claim and the slot acquisition are named prepared statements run on every
// effect. Postgres plans such a statement afresh on each execution (a custom plan) until a
// generic plan looks no costlier; with the slot scopes as `unnest` of array parameters it never
// did, and every claim paid its planning again (about 0.6 ms). These check that both settle on
// the generic plan, on one session, as the planner reports it (`pg_prepared_statements`).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { releaseSlot, tryAcquireSlot, type SlotRequest } from '../../store/concurrency.js';
import { beginEffect } from '../../store/effects.js';
import { createTestDatabase } from '../support/harness.js';

let pool: pg.Pool;
let client: pg.PoolClient;

beforeAll(async () => {
  const url = await createTestDatabase('plan_cache', inject('databaseUrl'));
  pool = createPool(url, createLogger('test', 'silent'), 2);
  await migrate(pool);
  client = await pool.connect();
});
afterAll(async () => {
  client?.release();
  await pool?.end();
});

const slot = (holder: string, total?: number): SlotRequest => ({
  jobType: 'summarize',
  tenantId: 'tenant-a',
  holder,
  perTenant: 8,
  global: 32,
  ...(total !== undefined ? { total } : {}),
  ttlMs: 15_000,
});

async function plans(name: string): Promise<{ generic: number; custom: number }> {
  const r = await client.query<{ generic: string; custom: string }>(
    'SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name = $1',
    [name],
  );
  expect(r.rows).toHaveLength(1);
  return { generic: Number(r.rows[0]!.generic), custom: Number(r.rows[0]!.custom) };
}

describe('the hot prepared statements use a generic plan once Postgres has seen them', () => {
  it('the slot acquisition, with two scopes and with three', async () => {
    for (const total of [undefined, 128]) {
      for (let i = 0; i < 8; i++) {
        const id = await tryAcquireSlot(client, slot(`plan-${total ?? 'none'}-${i}`, total));
        expect(id).not.toBeNull();
        await releaseSlot(client, id!);
      }
    }
    for (const name of ['acquire-slots-2', 'acquire-slots-3']) {
      const p = await plans(name);
      expect(p.custom + p.generic).toBe(8);
      expect(p.generic).toBeGreaterThanOrEqual(3);
    }
  });

  it("the effect's claim, which takes the slot in the same statement", async () => {
    for (let i = 0; i < 8; i++) {
      const key = `job-plan-${i}:summarize`;
      const row = await beginEffect(
        client,
        { effectKey: key, jobId: `job-plan-${i}`, tenantId: 'tenant-a', step: 'summarize', requestHash: 'h' },
        undefined,
        { slot: slot(`${key}#1`, 128) },
      );
      expect(row?.slot_id).toEqual(expect.any(String));
      await releaseSlot(client, row!.slot_id!);
    }
    const p = await plans('begin-effect-3');
    expect(p.custom + p.generic).toBe(8);
    expect(p.generic).toBeGreaterThanOrEqual(3);
  });
});
