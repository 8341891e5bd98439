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

/** The recorded windows of a type that start in [from, to), newest first (the console's window list). */
export async function windowRowsBetween(db: Db, jobType: string, from: Date, to: Date): Promise<WindowRow[]> {
  const r = await db.query<WindowRow>(
    `SELECT * FROM schedule_windows WHERE job_type = $1 AND window_start >= $2 AND window_start < $3 ORDER BY window_start DESC`,
    [jobType, from, to],
  );
  return r.rows;
}

export type ScheduleActionKind = 'paused' | 'unpaused' | 'triggered' | 'backfilled';

export interface ScheduleActionRow {
  job_type: string;
  schedule_id: string;
  action: ScheduleActionKind;
  actor: string;
  key_id: string | null;
  reason: string | null;
  details: Record<string, unknown>;
  at: Date;
}

/** One audit row per operator action on a Schedule (append-only, schema/0042). */
export async function insertScheduleAction(db: Db, a: Omit<ScheduleActionRow, 'at'>): Promise<void> {
  await db.query(
    `INSERT INTO schedule_actions (job_type, schedule_id, action, actor, key_id, reason, details) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [a.job_type, a.schedule_id, a.action, a.actor, a.key_id, a.reason, JSON.stringify(a.details)],
  );
}

export async function listScheduleActions(db: Db, jobType: string, limit: number): Promise<ScheduleActionRow[]> {
  const r = await db.query<ScheduleActionRow>(
    `SELECT job_type, schedule_id, action, actor, key_id, reason, details, at FROM schedule_actions
      WHERE job_type = $1 ORDER BY at DESC, id DESC LIMIT $2`,
    [jobType, limit],
  );
  return r.rows;
}

/**
 * The pause and unpause actions on one Schedule before `before`, oldest first: the operator
 * pauses whose windows the compensation scan leaves alone (services/schedule-windows.ts,
 * `pauseSpans`).
 */
export async function pauseActionsBefore(
  db: Db,
  jobType: string,
  scheduleId: string,
  before: Date,
): Promise<Array<Pick<ScheduleActionRow, 'action' | 'actor' | 'reason' | 'at'>>> {
  const r = await db.query<Pick<ScheduleActionRow, 'action' | 'actor' | 'reason' | 'at'>>(
    `SELECT action, actor, reason, at FROM schedule_actions
      WHERE job_type = $1 AND schedule_id = $2 AND action IN ('paused', 'unpaused') AND at < $3
      ORDER BY at, id`,
    [jobType, scheduleId, before],
  );
  return r.rows;
}

/** The step errors of the scan runs that finished after `since`, newest first: why a missed window was not filled. */
export async function scanErrorsSince(db: Db, since: Date): Promise<Array<{ finishedAt: Date; details: string[] }>> {
  const r = await db.query<{ finished_at: Date; error_details: string[] }>(
    `SELECT finished_at, error_details FROM scan_runs WHERE finished_at > $1 AND errors > 0 ORDER BY finished_at DESC LIMIT 50`,
    [since],
  );
  return r.rows.map((x) => ({ finishedAt: x.finished_at, details: x.error_details }));
}

/** When the last scan run that looked at windows up to `after` finished (null: none yet). */
export async function lastScanAfter(db: Db, after: Date): Promise<Date | null> {
  const r = await db.query<{ at: Date | null }>(`SELECT max(finished_at) AS at FROM scan_runs WHERE scan_now > $1`, [after]);
  return r.rows[0]?.at ?? null;
}
