import type pg from 'pg';
import type { Priority } from '../contract/job-types.js';
import type { Db } from '../lib/db.js';
import { heldByScopeSql, SETTING_COLUMNS, toSetting, type DegradationSetting, type SettingRow } from './degradation.js';
import { deleteExpired } from './live-jobs.js';

/** The admission ledger of ramped resumes (table admissions): one slot per job and round. */

/**
 * Any constant works as long as every admitter uses it. The lock serialises slot
 * reservation and the per-minute cap across worker processes: without it two workers could
 * read the same last slot (or the same count) and both take it.
 */
const ADMISSION_LOCK = 7_210_443_602;

export interface Reservation {
  job_id: string;
  round: number;
  priority: Priority;
  slot_at: Date;
  admitted_at: Date | null;
  now: Date;
}

export async function findReservation(db: Db, jobId: string, round: number): Promise<Reservation | undefined> {
  const r = await db.query<Reservation>('SELECT *, clock_timestamp() AS now FROM admissions WHERE job_id = $1 AND round = $2', [
    jobId,
    round,
  ]);
  return r.rows[0];
}

export interface AdmissionFacts {
  /** The job's status; undefined when its intent is not visible (yet). */
  status: string | undefined;
  setting: DegradationSetting;
  reservation: Reservation | undefined;
  /**
   * Other jobs of this priority are still deferred: a new one queues behind them. Not those a
   * scope pause still holds (a paused tenant or type): they are not ahead of anyone until
   * their pause is lifted, and counting them would ramp every other tenant's jobs.
   */
  othersDeferred: boolean;
}

/**
 * Everything the degradation gate reads, in one statement (one round trip, one snapshot)
 * instead of four: the job's status, the one-row setting, this round's reservation, and
 * whether others of its priority are deferred (served by the partial index of migration 0016).
 * An exception to one-statement-per-table: it only reads, and it is on every job's path.
 */
export async function admissionFacts(db: Db, jobId: string, round: number, priority: Priority): Promise<AdmissionFacts> {
  const r = await db.query<
    SettingRow & { status: string | null; slot_at: Date | null; admitted_at: Date | null; now: Date; others_deferred: boolean }
  >({
    name: 'admission-facts',
    text: `SELECT i.status, ${SETTING_COLUMNS('s')}, a.slot_at, a.admitted_at, clock_timestamp() AS now,
                  EXISTS (SELECT 1 FROM job_intents o WHERE o.status = 'deferred' AND o.priority = $3 AND o.job_id <> $1
                             AND NOT ${heldByScopeSql('o', 's')}) AS others_deferred
             FROM degradation_setting s
             LEFT JOIN job_intents i ON i.job_id = $1
             LEFT JOIN admissions a ON a.job_id = $1 AND a.round = $2
            WHERE s.id = 1`,
    values: [jobId, round, priority],
  });
  const row = r.rows[0]!;
  return {
    status: row.status ?? undefined,
    setting: toSetting(row),
    reservation: row.slot_at
      ? { job_id: jobId, round, priority, slot_at: row.slot_at, admitted_at: row.admitted_at, now: row.now }
      : undefined,
    othersDeferred: row.others_deferred,
  };
}

export async function lockAdmissions(tx: pg.PoolClient): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [ADMISSION_LOCK]);
}

/**
 * Reserves the next evenly spaced slot (60 s / rate after the last one, never in the past).
 * Call under `lockAdmissions`. The key (job, round) makes a retried reservation a no-op:
 * RETURNING is then empty and the caller reads the existing row.
 */
export async function reserveSlot(
  tx: pg.PoolClient,
  jobId: string,
  round: number,
  priority: Priority,
  ratePerMinute: number,
): Promise<Reservation | undefined> {
  const r = await tx.query<Reservation>(
    `INSERT INTO admissions (job_id, round, priority, reserved_at, slot_at)
     SELECT $1, $2, $3, clock_timestamp(),
            greatest(clock_timestamp(), coalesce(max(slot_at) + (60000.0 / $4) * interval '1 millisecond', clock_timestamp()))
       FROM admissions
     ON CONFLICT (job_id, round) DO NOTHING
     RETURNING *, clock_timestamp() AS now`,
    [jobId, round, priority, ratePerMinute],
  );
  return r.rows[0];
}

/** Admission times of the last minute (the hard cap's evidence). Call under `lockAdmissions`. */
export async function admittedLastMinute(tx: pg.PoolClient): Promise<{ times: Date[]; now: Date }> {
  const r = await tx.query<{ times: Date[]; now: Date }>(
    `SELECT coalesce(array_agg(admitted_at), '{}') AS times, clock_timestamp() AS now
       FROM admissions WHERE admitted_at > clock_timestamp() - interval '60 seconds'`,
  );
  return r.rows[0]!;
}

export async function markSlotAdmitted(tx: pg.PoolClient, jobId: string, round: number): Promise<void> {
  await tx.query('UPDATE admissions SET admitted_at = clock_timestamp() WHERE job_id = $1 AND round = $2 AND admitted_at IS NULL', [
    jobId,
    round,
  ]);
}

/**
 * Ramped admissions waiting for their slot (reserved, not yet admitted, slot not long past).
 * A paused priority has none: its jobs take a new round when it resumes (a ramp stop or an
 * operator paused it again), so the slots they held are void.
 */
export async function pendingReservations(db: Db): Promise<{ n: number; last_slot: Date | null }> {
  const r = await db.query<{ n: number; last_slot: Date | null }>(
    `SELECT count(*)::int AS n, max(a.slot_at) AS last_slot FROM admissions a
      WHERE a.admitted_at IS NULL AND a.slot_at > now() - interval '10 minutes'
        AND a.priority <> ALL (coalesce((SELECT s.paused_priorities FROM degradation_setting s WHERE s.id = 1), '{}'::text[]))`,
  );
  return r.rows[0]!;
}

// ---- retention ----

/** One batch of the retention cleanup: admission slots more than `days` old, of jobs that are not live. */
export function deleteExpiredAdmissions(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'admissions', age: 'slot_at', job: 'job_id' }, days, limit);
}

export async function deleteAdmissionsOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM admissions WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
