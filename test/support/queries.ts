// Read-only queries and arithmetic that only tests use to observe the product (never product code).
import type pg from 'pg';
import type { WindowRow } from '../../store/schedules.js';

type Db = pg.Pool | pg.PoolClient;

export async function getWindow(db: Db, jobType: string, windowStart: string): Promise<WindowRow | undefined> {
  const r = await db.query<WindowRow>('SELECT * FROM schedule_windows WHERE job_type = $1 AND window_start = $2', [jobType, windowStart]);
  return r.rows[0];
}

export async function listWindows(db: Db, jobType: string): Promise<WindowRow[]> {
  const r = await db.query<WindowRow>('SELECT * FROM schedule_windows WHERE job_type = $1 ORDER BY window_start', [jobType]);
  return r.rows;
}

/** The ledger as evidence (tests): admission times in order. */
export async function admissionTimes(db: Db, jobIds?: string[]): Promise<Array<{ job_id: string; slot_at: Date; admitted_at: Date }>> {
  const r = await db.query(
    `SELECT job_id, slot_at, admitted_at FROM admissions
      WHERE admitted_at IS NOT NULL AND ($1::text[] IS NULL OR job_id = ANY($1)) ORDER BY admitted_at`,
    [jobIds ?? null],
  );
  return r.rows;
}

/** The largest number of events inside any half-open window [t, t + windowMs) of sorted or unsorted times. */
export function maxInSlidingWindow(timesMs: number[], windowMs: number): number {
  const t = [...timesMs].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < t.length; hi++) {
    while (t[hi]! - t[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}
