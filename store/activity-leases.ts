import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

// Lease tracking, written by the worker (activities/lease-tracking.ts): a row when a leased
// attempt starts, its end when it ends; the next attempt flags one that never ended.
export interface LeaseKey {
  jobId: string;
  runId: string;
  activityId: string;
  attempt: number;
}

/**
 * The attempt's lease row; `step` is set by a job step (activities/job-steps.ts), which writes
 * it in its first transaction. Named statement: it is on every attempt's path.
 */
export async function leaseStarted(db: Db, k: LeaseStart): Promise<void> {
  await db.query({
    name: 'lease-started',
    text: `INSERT INTO activity_leases (job_id, run_id, activity_id, attempt, activity_type, deadline_at, step)
           VALUES ($1, $2, $3, $4, $5, clock_timestamp() + $6 * interval '1 millisecond', $7)
           ON CONFLICT DO NOTHING`,
    values: [k.jobId, k.runId, k.activityId, k.attempt, k.activityType, k.startToCloseMs, k.step ?? null],
  });
}

/**
 * `leaseStarted` as a CTE of the statement that starts an attempt (store/intents.ts
 * `startAttempt`), so the lease row and the attempt's first writes commit together in one
 * round trip. Parameters `$i..$i+6` (`leaseStartedParams`); all NULL inserts nothing, and so
 * does a false `when` (an SQL condition of the statement's, such as the degradation gate's answer).
 */
export function leaseStartedCte(i: number, when = 'true'): string {
  // A NULL attempt (a local activity's lease, activities/job-steps.ts) takes the next number
  // of its activity: Postgres numbers those attempts, so a takeover after a lost workflow task
  // (where the SDK counts from 1 again) still fences the attempt it took over from.
  return `lease_started AS (
             INSERT INTO activity_leases (job_id, run_id, activity_id, attempt, activity_type, deadline_at, step)
             SELECT $${i}::text, $${i + 1}::text, $${i + 2}::text,
                    coalesce($${i + 3}::int, (SELECT coalesce(max(p.attempt), 0) + 1 FROM activity_leases p
                                               WHERE p.job_id = $${i} AND p.run_id = $${i + 1} AND p.activity_id = $${i + 2})),
                    $${i + 4}::text, clock_timestamp() + $${i + 5}::float8 * interval '1 millisecond', $${i + 6}::text
              WHERE $${i}::text IS NOT NULL AND ${when}
             ON CONFLICT DO NOTHING
             RETURNING attempt)`;
}

/** `attempt` null: a local activity's lease, numbered by Postgres (`leaseStartedCte`). */
export type LeaseStart = Omit<LeaseKey, 'attempt'> & {
  attempt: number | null;
  activityType: string;
  startToCloseMs: number;
  step?: string;
};

export function leaseStartedParams(k: LeaseStart | undefined): unknown[] {
  return k
    ? [k.jobId, k.runId, k.activityId, k.attempt, k.activityType, k.startToCloseMs, k.step ?? null]
    : [null, null, null, null, null, null, null];
}

/**
 * An attempt that ends keeps an earlier `lease_expired` verdict: it ended after it lost its
 * lease. It says `lease_expired` itself when Temporal timed out its heartbeat while it ran.
 */
export async function leaseEnded(db: Db, k: LeaseKey, outcome: LeaseOutcome): Promise<void> {
  await db.query({ name: 'lease-ended', text: leaseEndedSql(1), values: leaseEndedParams(k, outcome) });
}

export type LeaseOutcome = 'completed' | 'failed' | 'cancelled' | 'lease_expired';

function leaseEndedSql(i: number): string {
  const p = (k: number, type: string) => `$${i + k}::${type}`;
  return `UPDATE activity_leases SET ended_at = clock_timestamp(), outcome = CASE WHEN outcome = 'lease_expired' THEN outcome ELSE ${p(4, 'text')} END,
                 expired_detected_at = CASE WHEN ${p(4, 'text')} = 'lease_expired' THEN coalesce(expired_detected_at, clock_timestamp()) ELSE expired_detected_at END
          WHERE job_id = ${p(0, 'text')} AND run_id = ${p(1, 'text')} AND activity_id = ${p(2, 'text')} AND attempt = ${p(3, 'int')} AND ended_at IS NULL`;
}

/**
 * `leaseEnded` as a CTE of the statement that writes the step's result (store/intents.ts
 * `writeResultFenced`). Parameters `$i..$i+4` (`leaseEndedParams`); all NULL ends nothing.
 */
export function leaseEndedCte(i: number): string {
  return `lease_end AS (${leaseEndedSql(i)})`;
}

export function leaseEndedParams(k: LeaseKey | undefined, outcome: LeaseOutcome): unknown[] {
  return k ? [k.jobId, k.runId, k.activityId, k.attempt, outcome] : [null, null, null, null, null];
}

/**
 * Called by attempt N for attempt N-1: no end recorded means its lease expired. Returns
 * whether it was flagged now, and the step the lost attempt recorded at its start (the step
 * in its heartbeat details wins; an attempt lost before its first heartbeat has none).
 */
export async function flagLeaseExpired(db: Db, k: LeaseKey, heartbeatDetails: unknown): Promise<{ flagged: boolean; step: string | null }> {
  const r = await db.query<{ step: string | null }>(
    `UPDATE activity_leases SET outcome = 'lease_expired', expired_detected_at = clock_timestamp(), heartbeat_details = $5
      WHERE job_id = $1 AND run_id = $2 AND activity_id = $3 AND attempt = $4 AND ended_at IS NULL AND outcome IS NULL
      RETURNING step`,
    [k.jobId, k.runId, k.activityId, k.attempt, heartbeatDetails === undefined ? null : JSON.stringify(heartbeatDetails)],
  );
  return { flagged: r.rowCount === 1, step: r.rows[0]?.step ?? null };
}

// ---- retention ----

/** One batch of the retention cleanup: leases started more than `days` ago, of jobs that are not live. */
export function deleteExpiredLeases(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'activity_leases', age: 'started_at', job: 'job_id' }, days, limit);
}

export async function deleteLeasesOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM activity_leases WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
