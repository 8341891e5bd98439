import type { Db } from '../lib/db.js';

export interface WindowRow {
  job_type: string;
  window_start: Date;
  window_end: Date;
  schedule_id: string;
  first_source: 'schedule' | 'manual' | 'scan';
  first_trigger_id: string;
  triggers: number;
  jobs: number | null;
  first_seen_at: Date;
  last_seen_at: Date;
  filled_at: Date | null;
}

/**
 * Records that a trigger saw this window. The primary key (job_type, window_start) makes the
 * first trigger the only inserter; later ones (duplicates, manual, backfill, scan) only
 * count themselves. Returns true for the first.
 */
export async function recordWindowSeen(
  db: Db,
  w: {
    jobType: string;
    windowStart: string;
    windowEnd: string;
    scheduleId: string;
    source: 'schedule' | 'manual' | 'scan';
    triggerId: string;
  },
): Promise<boolean> {
  const r = await db.query<{ inserted: boolean }>(
    `INSERT INTO schedule_windows (job_type, window_start, window_end, schedule_id, first_source, first_trigger_id)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (job_type, window_start) DO UPDATE
        SET triggers = schedule_windows.triggers + 1, last_seen_at = now()
     RETURNING (xmax = 0) AS inserted`,
    [w.jobType, w.windowStart, w.windowEnd, w.scheduleId, w.source, w.triggerId],
  );
  return r.rows[0]!.inserted;
}

/**
 * Set once every tenant's job for the window exists and was started. Only the first call
 * fills it (returns true): that is the one a trigger or a scan counts.
 */
export async function markWindowFilled(db: Db, jobType: string, windowStart: string, jobs: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE schedule_windows SET jobs = $3, filled_at = now() WHERE job_type = $1 AND window_start = $2 AND filled_at IS NULL`,
    [jobType, windowStart, jobs],
  );
  return r.rowCount === 1;
}

/** Which of these windows are recorded and filled (the scan fills the rest). */
export async function filledWindowStarts(db: Db, jobType: string, starts: string[]): Promise<Set<string>> {
  const r = await db.query<{ window_start: Date }>(
    `SELECT window_start FROM schedule_windows WHERE job_type = $1 AND window_start = ANY($2::timestamptz[]) AND filled_at IS NOT NULL`,
    [jobType, starts],
  );
  return new Set(r.rows.map((x) => x.window_start.toISOString()));
}
