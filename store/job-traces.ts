import type { Db } from '../lib/db.js';

/**
 * Records the trace a job's intake started (migration 0052). A duplicate submit of the same
 * intent keeps the first trace: the job's work is in that one.
 */
export async function insertJobTrace(db: Db, jobId: string, traceId: string): Promise<void> {
  await db.query('INSERT INTO job_traces (job_id, trace_id) VALUES ($1, $2) ON CONFLICT (job_id) DO NOTHING', [jobId, traceId]);
}

/** The job's trace ID, or null when none was recorded (tracing off, or not started by the intake). */
export async function findJobTrace(db: Db, jobId: string): Promise<string | null> {
  const r = await db.query<{ trace_id: string }>('SELECT trace_id FROM job_traces WHERE job_id = $1', [jobId]);
  return r.rows[0]?.trace_id ?? null;
}
