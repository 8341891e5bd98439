import type { Db } from '../lib/db.js';

/** What grouping dead letters into failure clusters reads: evidence only, never input. */
export interface ClusterSourceRow {
  id: string;
  job_id: string;
  tenant_id: string;
  job_type: string;
  error_class: string;
  status_code: number | null;
  provider_code: string | null;
  message: string;
  state: string;
  first_failure_at: Date;
  last_failure_at: Date;
}

/**
 * Dead letters in `states`, newest failure first, at most `limit` (the clusters are computed in
 * the service, whose normalizer is TypeScript: a regex chain in SQL would drift from it).
 * Reads index dead_letters_state (0003) for the state; optional tenant and type narrow it.
 */
export async function clusterSource(
  db: Db,
  f: { states: readonly string[]; tenantId?: string; jobType?: string; limit: number },
): Promise<ClusterSourceRow[]> {
  const r = await db.query<ClusterSourceRow>(
    `SELECT id, job_id, tenant_id, job_type, error_class, status_code, provider_code, message, state, first_failure_at, last_failure_at
       FROM dead_letters
      WHERE state = ANY ($1::text[]) AND ($2::text IS NULL OR tenant_id = $2) AND ($3::text IS NULL OR job_type = $3)
      ORDER BY last_failure_at DESC, id
      LIMIT $4`,
    [f.states, f.tenantId ?? null, f.jobType ?? null, f.limit],
  );
  return r.rows;
}
