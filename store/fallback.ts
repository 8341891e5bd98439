import type pg from 'pg';
import { WINDOWS } from '../lib/health.js';

/** Stale results and the fallback upstream's records. One function per statement. */
type Db = pg.Pool | pg.PoolClient;

export type Upstream = 'primary' | 'fallback';

export interface LastSuccess { job_id: string; result: unknown; finished_at: Date }

/**
 * The newest succeeded job of the same tenant, type and input (index
 * `job_intents_last_success`). Tenant-scoped by the first key column: another tenant's
 * result can never be found here.
 */
export async function lastSucceeded(db: Db, q: { tenantId: string; jobType: string; inputHash: string; exceptJobId: string }): Promise<LastSuccess | undefined> {
  const r = await db.query<LastSuccess>(
    `SELECT job_id, result, finished_at FROM job_intents
      WHERE tenant_id = $1 AND job_type = $2 AND input_hash = $3 AND status = 'succeeded'
        AND finished_at IS NOT NULL AND job_id <> $4
      ORDER BY finished_at DESC LIMIT 1`,
    [q.tenantId, q.jobType, q.inputHash, q.exceptJobId],
  );
  return r.rows[0];
}

/**
 * Records which upstream this attempt is about to call, before the call: a crash during it
 * leaves the effect in doubt at that upstream. A succeeded effect keeps its record.
 */
export async function setEffectUpstream(db: Db, effectKey: string, upstream: Upstream): Promise<void> {
  await db.query(`UPDATE effects SET upstream = $2 WHERE effect_key = $1 AND state <> 'succeeded'`, [effectKey, upstream]);
}

/**
 * The job's visible upstream and why. Once any effect of the job went to the fallback the
 * job says so for good: a later primary call does not hide it.
 */
export async function setJobUpstream(db: Db, jobId: string, upstream: Upstream, reason: string | null): Promise<void> {
  await db.query(
    `UPDATE job_intents SET upstream = $2, upstream_reason = $3, updated_at = now()
      WHERE job_id = $1 AND upstream IS DISTINCT FROM 'fallback'
        AND (upstream IS DISTINCT FROM $2 OR upstream_reason IS DISTINCT FROM $3)`,
    [jobId, upstream, reason],
  );
}

/** Effects sent to the fallback upstream, by job type: in each window (by last attempt) and all time. */
export async function fallbackUsedByType(db: Db): Promise<Array<{ job_type: string; total: number } & Record<string, number | string>>> {
  const windows = WINDOWS.map((w) => `count(*) FILTER (WHERE e.last_attempt_at > now() - interval '${w.seconds} seconds')::int AS used_${w.key}`).join(', ');
  const r = await db.query(
    `SELECT coalesce(i.job_type, 'other') AS job_type, count(*)::int AS total, ${windows}
       FROM effects e LEFT JOIN job_intents i ON i.job_id = e.job_id
      WHERE e.upstream = 'fallback'
      GROUP BY 1`);
  return r.rows;
}
