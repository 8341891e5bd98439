import type pg from 'pg';
import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

export interface AttemptRecord {
  jobId: string;
  step: string;
  attempt: number;
  /**
   * `fenced`: the attempt finished but its result write was refused (a newer attempt won).
   * `lease_expired`: it never reported (its worker died, or it lost its lease); recorded by
   * the next attempt, from the lease row.
   */
  outcome: 'succeeded' | 'retryable' | 'non_retryable' | 'reused' | 'reconciled' | 'fenced' | 'lease_expired';
  errorClass?: string;
  statusCode?: number;
  delayMs?: number;
  /** Why the delay (migration 0012): the upstream's Retry-After, or full jitter. */
  delaySource?: 'retry-after' | 'jitter';
  /** The upstream the failed call went to, and its own error code (migration 0021). Failures only. */
  upstream?: string;
  providerCode?: string;
  startedAt: Date;
}

/** Every attempt leaves a row: stacked retries from a second layer would show up here. */
export async function recordAttempt(db: pg.Pool | pg.PoolClient, a: AttemptRecord): Promise<void> {
  await db.query({
    name: 'record-attempt',
    text: `INSERT INTO job_attempts (job_id, step, attempt, outcome, error_class, status_code, delay_ms, started_at, delay_source,
                                      upstream, provider_code)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    values: [...recordAttemptParams(a), a.upstream ?? null, a.providerCode ?? null],
  });
}

/**
 * `recordAttempt` as a CTE of another statement (the effect's success, store/effects.ts), so
 * the attempt row commits with it in one round trip. Parameters `$i..$i+8`
 * (`recordAttemptParams`); all NULL inserts nothing, nor does a false `when`.
 */
export function recordAttemptCte(i: number, when?: string, name = 'attempt_row'): string {
  const p = (k: number, type: string) => `$${i + k}::${type}`;
  return `${name} AS (
             INSERT INTO job_attempts (job_id, step, attempt, outcome, error_class, status_code, delay_ms, started_at, delay_source)
             SELECT ${p(0, 'text')}, ${p(1, 'text')}, ${p(2, 'int')}, ${p(3, 'text')}, ${p(4, 'text')}, ${p(5, 'int')}, ${p(6, 'int')},
                    ${p(7, 'timestamptz')}, ${p(8, 'text')}
              WHERE ${p(0, 'text')} IS NOT NULL${when ? ` AND ${when}` : ''})`;
}

export function recordAttemptParams(a: AttemptRecord | undefined): unknown[] {
  return a
    ? [
        a.jobId,
        a.step,
        a.attempt,
        a.outcome,
        a.errorClass ?? null,
        a.statusCode ?? null,
        a.delayMs ?? null,
        a.startedAt,
        a.delaySource ?? null,
      ]
    : [null, null, null, null, null, null, null, null, null];
}

export async function attemptsForJob(db: pg.Pool, jobId: string): Promise<Array<AttemptRecord & { finishedAt: Date }>> {
  const r = await db.query(
    `SELECT job_id AS "jobId", step, attempt, outcome, error_class AS "errorClass", status_code AS "statusCode",
            delay_ms AS "delayMs", started_at AS "startedAt", finished_at AS "finishedAt"
       FROM job_attempts WHERE job_id = $1 ORDER BY id`,
    [jobId],
  );
  return r.rows;
}

/**
 * An attempt that lost its lease gets a row from its lease row: its worker died (recorded by
 * the next attempt) or Temporal timed out its heartbeat while the worker lived (recorded by
 * the attempt itself when it hears it). `step`: from the heartbeat details when known, else
 * the lease row's. At most one such row per step attempt, whoever records it first (an effect's
 * own row of the same attempt, written before it was lost, stays beside it).
 */
export async function recordLostAttempt(
  db: pg.Pool | pg.PoolClient,
  k: { jobId: string; runId: string; activityId: string; attempt: number },
  step?: string,
  attemptOffset = 0,
): Promise<void> {
  // A lease row numbers the attempts of one schedule; the job's attempt adds the step's attempts
  // before that schedule (`SlotWaitArgs.attemptOffset`).
  await db.query(
    `INSERT INTO job_attempts (job_id, step, attempt, outcome, error_class, started_at, finished_at)
     SELECT l.job_id, coalesce($5, l.step), l.attempt + $6, 'lease_expired', 'lease_lost', l.started_at,
            coalesce(l.expired_detected_at, l.ended_at, now())
       FROM activity_leases l
      WHERE l.job_id = $1 AND l.run_id = $2 AND l.activity_id = $3 AND l.attempt = $4 AND coalesce($5, l.step) IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = l.job_id AND a.step = coalesce($5, l.step)
                                                          AND a.attempt = l.attempt + $6 AND a.outcome = 'lease_expired')`,
    [k.jobId, k.runId, k.activityId, k.attempt, step ?? null, attemptOffset],
  );
}

/** Attempts and the failure window of a job, from its recorded attempts. */
export async function failureWindow(
  db: Db,
  jobId: string,
): Promise<{
  attempts: number;
  last_failed_attempt: number | null;
  first_failure_at: Date | null;
  last_failure_at: Date | null;
  /** The last failed attempt's upstream and the provider's own code (migration 0021), when it reached one. */
  upstream: string | null;
  provider_code: string | null;
}> {
  const r = await db.query(
    `SELECT count(*)::int AS attempts,
            (array_agg(attempt ORDER BY finished_at DESC, id DESC) FILTER (WHERE outcome IN ('retryable', 'non_retryable')))[1]
              AS last_failed_attempt,
            (array_agg(upstream ORDER BY finished_at DESC, id DESC) FILTER (WHERE outcome IN ('retryable', 'non_retryable')))[1]
              AS upstream,
            (array_agg(provider_code ORDER BY finished_at DESC, id DESC) FILTER (WHERE outcome IN ('retryable', 'non_retryable')))[1]
              AS provider_code,
            min(finished_at) FILTER (WHERE outcome IN ('retryable', 'non_retryable')) AS first_failure_at,
            max(finished_at) FILTER (WHERE outcome IN ('retryable', 'non_retryable')) AS last_failure_at
       FROM job_attempts WHERE job_id = $1`,
    [jobId],
  );
  return r.rows[0];
}

// ---- retention ----

/** One batch of the retention cleanup: attempts older than `days` of jobs that are not live. */
export function deleteExpiredAttempts(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'job_attempts', age: 'finished_at', job: 'job_id' }, days, limit);
}

/** Every attempt of these (expired, finished) jobs: deleted with their intent. */
export async function deleteAttemptsOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM job_attempts WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
