import type pg from 'pg';

export interface AttemptRecord {
  jobId: string;
  step: string;
  attempt: number;
  /** `fenced`: the attempt finished but its result write was refused (a newer attempt won). */
  outcome: 'succeeded' | 'retryable' | 'non_retryable' | 'reused' | 'reconciled' | 'fenced';
  errorClass?: string;
  statusCode?: number;
  delayMs?: number;
  /** Why the delay (migration 0012): the upstream's Retry-After, or full jitter. */
  delaySource?: 'retry-after' | 'jitter';
  startedAt: Date;
}

/** Every attempt leaves a row: stacked retries from a second layer would show up here. */
export async function recordAttempt(db: pg.Pool | pg.PoolClient, a: AttemptRecord): Promise<void> {
  await db.query(
    `INSERT INTO job_attempts (job_id, step, attempt, outcome, error_class, status_code, delay_ms, started_at, delay_source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [a.jobId, a.step, a.attempt, a.outcome, a.errorClass ?? null, a.statusCode ?? null, a.delayMs ?? null, a.startedAt, a.delaySource ?? null],
  );
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
