import type pg from 'pg';
import { withTransaction } from '../lib/db.js';

export interface SlotRequest {
  jobType: string;
  tenantId: string;
  holder: string;
  perTenant: number;
  global: number;
  ttlMs: number;
}

/**
 * Takes a slot if both caps allow it. Counting and inserting must be one atomic step, or
 * two workers could both see "1 of 2 used" and both take the last slot; a transaction-scoped
 * advisory lock per job type serialises the acquirers (releases and renewals need no lock).
 * Expired leases (their holder died) are swept first, so a dead worker's slot comes back.
 */
export async function tryAcquireSlot(pool: pg.Pool, r: SlotRequest): Promise<string | null> {
  return withTransaction(pool, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('concurrency:' || $1))`, [r.jobType]);
    await tx.query('DELETE FROM concurrency_leases WHERE job_type = $1 AND expires_at < now()', [r.jobType]);
    const counts = await tx.query<{ tenant: number; total: number }>(
      `SELECT count(*) FILTER (WHERE tenant_id = $2)::int AS tenant, count(*)::int AS total
         FROM concurrency_leases WHERE job_type = $1`,
      [r.jobType, r.tenantId],
    );
    const c = counts.rows[0]!;
    if (c.tenant >= r.perTenant || c.total >= r.global) return null;
    const ins = await tx.query<{ id: string }>(
      `INSERT INTO concurrency_leases (job_type, tenant_id, holder, expires_at)
       VALUES ($1, $2, $3, now() + ($4 || ' milliseconds')::interval) RETURNING id`,
      [r.jobType, r.tenantId, r.holder, String(r.ttlMs)],
    );
    return ins.rows[0]!.id;
  });
}

export async function renewSlot(pool: pg.Pool, id: string, ttlMs: number): Promise<void> {
  await pool.query(`UPDATE concurrency_leases SET expires_at = now() + ($2 || ' milliseconds')::interval WHERE id = $1`, [
    id,
    String(ttlMs),
  ]);
}

export async function releaseSlot(pool: pg.Pool, id: string): Promise<void> {
  await pool.query('DELETE FROM concurrency_leases WHERE id = $1', [id]);
}
