// Which waiting job a freed slot wakes (store/concurrency.ts `releaseSlot`, `wokenWaiterCte`):
// the oldest waiter of the lease's job type and tenant, else of its job type, never one of
// another type, nor one whose job has finished; each waiter once, however many releases run.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { forgetWaiter, registerWaiter, releaseSlot, tryAcquireSlot, type SlotRequest } from '../../store/concurrency.js';
import { insertIntent } from '../../store/intents.js';
import { createTestDatabase } from '../support/harness.js';

let pool: pg.Pool;

beforeAll(async () => {
  const url = await createTestDatabase('slot_waiters', inject('databaseUrl'));
  pool = createPool(url, createLogger('test', 'silent'), 4);
  await prepareStack(pool, {
    tenants: [
      { tenantId: 'tenant-a', apiKey: 'key-tenant-a' },
      { tenantId: 'tenant-b', apiKey: 'key-tenant-b' },
    ],
  });
});
afterAll(async () => {
  await pool?.end();
});

const slot = (jobType: string, tenantId: string, holder: string): SlotRequest => ({
  jobType,
  tenantId,
  holder,
  perTenant: 4,
  global: 8,
  ttlMs: 15_000,
});

async function taken(jobType: string, tenantId: string): Promise<string> {
  const id = await tryAcquireSlot(pool, slot(jobType, tenantId, `${jobType}:${tenantId}:${Math.random()}`));
  expect(id).not.toBeNull();
  return id!;
}

/** Registers waiters (each with its job's intent) one after another, so each has a later `since` than the one before. */
async function waiting(...ws: Array<[string, string, string]>): Promise<void> {
  for (const [jobId, jobType, tenantId] of ws) {
    await insertIntent(pool, { jobId, tenantId, jobType, keyHash: null, inputHash: 'h', input: {}, priority: 'normal' });
    await registerWaiter(pool, { jobId, jobType, tenantId });
    await pool.query('SELECT pg_sleep(0.002)');
  }
}

describe('the waiter a freed slot wakes', () => {
  it("its tenant's oldest first, then its type's oldest, never another type's", async () => {
    await waiting(
      ['w-digest-a', 'digest', 'tenant-a'],
      ['w-sum-b-1', 'summarize', 'tenant-b'],
      ['w-sum-a-1', 'summarize', 'tenant-a'],
      ['w-sum-a-2', 'summarize', 'tenant-a'],
    );
    // Registering again keeps the place.
    await registerWaiter(pool, { jobId: 'w-sum-b-1', jobType: 'summarize', tenantId: 'tenant-b' });
    const woken: Array<string | null> = [];
    for (let i = 0; i < 4; i++) woken.push(await releaseSlot(pool, await taken('summarize', 'tenant-a')));
    expect(woken).toEqual(['w-sum-a-1', 'w-sum-a-2', 'w-sum-b-1', null]);
    expect(await releaseSlot(pool, await taken('digest', 'tenant-b'))).toBe('w-digest-a');
    expect((await pool.query('SELECT count(*)::int AS n FROM slot_waiters')).rows[0].n).toBe(0);
  });

  it('releases at once wake each waiter once; a waiter that got its slot is not woken', async () => {
    await waiting(['w-1', 'summarize', 'tenant-a'], ['w-2', 'summarize', 'tenant-a'], ['w-gone', 'summarize', 'tenant-a']);
    await forgetWaiter(pool, 'w-gone');
    const leases = [await taken('summarize', 'tenant-a'), await taken('summarize', 'tenant-a'), await taken('summarize', 'tenant-a')];
    const woken = await Promise.all(leases.map((id) => releaseSlot(pool, id)));
    expect(woken.filter((w) => w !== null).sort()).toEqual(['w-1', 'w-2']);
  });

  it('a waiter whose job finished meanwhile is passed over, and the next waiter of its type clears it', async () => {
    await waiting(['w-cancelled', 'summarize', 'tenant-a'], ['w-live', 'summarize', 'tenant-a']);
    await pool.query(`UPDATE job_intents SET status = 'cancelled', finished_at = now() WHERE job_id = 'w-cancelled'`);
    expect(await releaseSlot(pool, await taken('summarize', 'tenant-a'))).toBe('w-live');
    expect(await releaseSlot(pool, await taken('summarize', 'tenant-a'))).toBeNull();
    await waiting(['w-next', 'summarize', 'tenant-b']);
    expect((await pool.query('SELECT job_id FROM slot_waiters ORDER BY job_id')).rows).toEqual([{ job_id: 'w-next' }]);
    await forgetWaiter(pool, 'w-next');
  });

  it('a release that frees nothing wakes nobody', async () => {
    await waiting(['w-late', 'summarize', 'tenant-a']);
    expect(await releaseSlot(pool, '999999999')).toBeNull();
    expect((await pool.query('SELECT job_id FROM slot_waiters')).rows).toEqual([{ job_id: 'w-late' }]);
  });
});
