import type { Db } from '../lib/db.js';

/** Reruns of finished jobs (schema/0032_bulk_actions_reruns.sql). One function per statement. */

/** Locks the original's row: two reruns of one job at once get numbers 1 and 2, never 1 twice. */
export async function lockIntentForRerun(db: Db, jobId: string): Promise<{ status: string } | undefined> {
  const r = await db.query<{ status: string }>('SELECT status FROM job_intents WHERE job_id = $1 FOR UPDATE', [jobId]);
  return r.rows[0];
}

/** How many reruns the job has (its next rerun is number n + 1). */
export async function rerunCount(db: Db, jobId: string): Promise<number> {
  const r = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM job_intents WHERE rerun_of = $1', [jobId]);
  return r.rows[0]!.n;
}

export async function markRerun(db: Db, jobId: string, rerunOf: string, fromStep: string | null): Promise<void> {
  await db.query('UPDATE job_intents SET rerun_of = $2, rerun_from_step = $3 WHERE job_id = $1', [jobId, rerunOf, fromStep]);
}

/**
 * Copies the original's succeeded effects of `steps` into the rerun's own scope (`<rerunId>:<step>`),
 * so the rerun finds them stored and reuses them without calling the upstream. The effects that
 * execute again get fresh keys under the rerun's scope: the upstream sees a new Idempotency-Key
 * and really does the work again (the original's key would only return its first answer).
 */
export async function copySucceededEffects(db: Db, fromScope: string, toScope: string, steps: readonly string[]): Promise<number> {
  if (steps.length === 0) return 0;
  const r = await db.query(
    `INSERT INTO effects (effect_key, job_id, tenant_id, step, state, request_hash, provider_request_id, provider_id,
                          result, attempts, in_doubt, upstream)
     SELECT $2 || ':' || step, $2, tenant_id, step, 'succeeded', request_hash, provider_request_id, provider_id,
            result, 0, false, upstream
       FROM effects
      WHERE job_id = $1 AND state = 'succeeded' AND step = ANY ($3::text[])
     ON CONFLICT (effect_key) DO NOTHING`,
    [fromScope, toScope, steps],
  );
  return r.rowCount ?? 0;
}

/** An operator's action on one job outside a bulk action (schema/0046_job_actions_audit.sql). */
export interface JobActionRow {
  job_id: string;
  action: string;
  actor: string;
  result_job_id: string | null;
  details: Record<string, unknown>;
  at: Date;
}

/** The audit row of a single rerun, under the operator's name, in the rerun's own transaction. */
export async function insertRerunAction(
  db: Db,
  a: { jobId: string; rerunJobId: string; actor: string; fromStep: string | null },
): Promise<void> {
  await db.query(`INSERT INTO job_actions (job_id, action, actor, result_job_id, details) VALUES ($1, 'rerun', $2, $3, $4)`, [
    a.jobId,
    a.actor,
    a.rerunJobId,
    a.fromStep !== null ? { fromStep: a.fromStep } : {},
  ]);
}

/** The actions taken on a job, or that made it (a rerun's row, on the rerun's own timeline), oldest first. */
export async function jobActionsOf(db: Db, jobId: string): Promise<JobActionRow[]> {
  const r = await db.query<JobActionRow>(
    `SELECT job_id, action, actor, result_job_id, details, at FROM job_actions
      WHERE job_id = $1 OR result_job_id = $1 ORDER BY at, id`,
    [jobId],
  );
  return r.rows;
}
