import type { JobState } from '../contract/job-types.js';
import type { Db } from '../lib/db.js';
import type { FoundIntent } from './intents.js';

/** One page of a job list: every filter optional but the page's size. */
export interface PageFilter {
  /** A tenant's own list (always set for a tenant); absent: across tenants (operators). */
  tenantId?: string;
  jobId?: string;
  jobType?: string;
  /** Any of these visible states (`scheduled` and `queued` are told apart by `run_at`, as the API does). */
  states?: readonly JobState[];
  /** created_at >= this */
  createdAfter?: Date;
  /** created_at < this */
  createdBefore?: Date;
  tag?: { key: string; value: string };
  /** Rows strictly older than this position (the last row of the previous page). */
  after?: PagePosition;
  limit: number;
}

/** A row's place in the order: its creation time in whole microseconds since the epoch (text: exact), then its ID. */
export interface PagePosition {
  createdUs: string;
  jobId: string;
}

/** The API's `scheduled` and `queued`, from the row's `queued` and its time (services/job-status.ts `visibleState`). */
const STATE_SQL: Partial<Record<JobState, string>> = {
  scheduled: `(status = 'queued' AND run_at > now())`,
  queued: `(status = 'queued' AND (run_at IS NULL OR run_at <= now()))`,
};

const COLUMNS = `job_id, tenant_id, job_type, input_hash, priority, status, status_reason, attempts, last_error, next_attempt_at,
       result, notification_state, replay_of, workflow_started_at, first_started_at, execution_ms, finished_at, created_at,
       updated_at, dead_letter_id, deferred_at, admitted_at, upstream, upstream_reason, run_at, tags, progress, progress_at, rerun_of, rerun_from_step,
       (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us`;

/**
 * The page's statement, newest first, by keyset: `(created_at, job_id) < (the cursor's)`, never
 * OFFSET, so a page costs the same however deep it is, and jobs inserted meanwhile (newer than
 * the first page) never shift a later page. A tenant's list reads index `job_intents_tenant_page`
 * backwards, the operators' list `job_intents_page` (migration 0025); the other filters are
 * checked on the rows the index yields, a tag through `job_intents_tags` when it is selective.
 * It fetches one row more than the page to know whether another page follows. Exported for the
 * test that shows its plan.
 */
export function pageQuery(f: PageFilter): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (f.tenantId !== undefined) where.push(`tenant_id = ${param(f.tenantId)}`);
  if (f.jobId !== undefined) where.push(`job_id = ${param(f.jobId)}`);
  if (f.jobType !== undefined) where.push(`job_type = ${param(f.jobType)}`);
  if (f.states && f.states.length > 0) {
    const plain = f.states.filter((s) => STATE_SQL[s] === undefined);
    const parts = f.states.flatMap((s) => STATE_SQL[s] ?? []);
    if (plain.length > 0) parts.push(`status = ANY (${param(plain)}::text[])`);
    where.push(`(${parts.join(' OR ')})`);
  }
  if (f.createdAfter) where.push(`created_at >= ${param(f.createdAfter)}`);
  if (f.createdBefore) where.push(`created_at < ${param(f.createdBefore)}`);
  if (f.tag) where.push(`tags @> ${param(JSON.stringify({ [f.tag.key]: f.tag.value }))}::jsonb`);
  if (f.after) {
    const at = `to_timestamp(0) + ${param(f.after.createdUs)}::bigint * interval '1 microsecond'`;
    where.push(`(created_at, job_id) < (${at}, ${param(f.after.jobId)})`);
  }
  const text = `SELECT ${COLUMNS}
  FROM job_intents ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
 ORDER BY created_at DESC, job_id DESC
 LIMIT ${param(f.limit + 1)}`;
  return { text, values };
}

export type PageRow = FoundIntent & { created_us: string };

/** One page and the position after its last row (undefined: no further page). Never the input. */
export async function pageIntents(db: Db, f: PageFilter): Promise<{ rows: PageRow[]; next?: PagePosition }> {
  const r = await db.query<PageRow>(pageQuery(f));
  const rows = r.rows.slice(0, f.limit);
  const last = rows[rows.length - 1];
  return r.rows.length > f.limit && last ? { rows, next: { createdUs: last.created_us, jobId: last.job_id } } : { rows };
}
