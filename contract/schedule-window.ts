/**
 * Window arithmetic for scheduled job types. Pure, so the trigger workflow, the scan's
 * activities and unit tests share it.
 *
 * A scheduled job type cuts time into windows of `windowMs`, aligned at the Unix epoch plus
 * `windowOffsetMs` (UTC). A trigger's nominal time falls into exactly one window, so every
 * trigger whose nominal time lies in the same window (a retry, a second `trigger()`, a
 * backfill, the scan) names the same window and therefore the same job.
 */
export interface WindowGrid {
  /** Length of a window. */
  windowMs: number;
  /** Where windows start, measured from the Unix epoch (UTC). Default 0. */
  windowOffsetMs?: number;
}

export interface ScheduleWindow {
  /** ISO 8601 UTC, millisecond precision: part of the job's identity. */
  start: string;
  end: string;
}

export function windowContaining(nominalMs: number, grid: WindowGrid): ScheduleWindow {
  if (!Number.isFinite(nominalMs)) throw new RangeError('nominal time must be a finite epoch milliseconds value');
  if (!Number.isInteger(grid.windowMs) || grid.windowMs < 1_000) throw new RangeError('windowMs must be a whole number of at least 1000');
  const offset = grid.windowOffsetMs ?? 0;
  const startMs = Math.floor((nominalMs - offset) / grid.windowMs) * grid.windowMs + offset;
  return { start: new Date(startMs).toISOString(), end: new Date(startMs + grid.windowMs).toISOString() };
}

/**
 * The idempotency key a scheduled window stands for: the scheduled job's ID derives from
 * (tenant, job type, this key), exactly like a client's Idempotency-Key, so the intake's
 * unique index and deterministic workflow ID guard windows too. It contains spaces, which a
 * client's Idempotency-Key may not (visible ASCII only), so no HTTP submission can ever
 * take a window's key.
 */
export function windowKey(jobType: string, window: ScheduleWindow): string {
  return `schedule window ${jobType} ${window.start}`;
}
