import type { Db } from '../lib/db.js';

/**
 * The retention cleanup's guard, shared by the statements of every per-job table (each in its
 * own store file): a row of a job that is still live is never deleted. A job is live while its
 * intent is unfinished, or while a dead letter of it is open or being replayed (that job's
 * attempts, effects and leases are the evidence the operator and the replay work from).
 * Rows whose job has no intent at all (system workflows, or an intent already pruned) are
 * judged by their own age only.
 */
export function jobIsLive(jobIdColumn: string): string {
  return `(EXISTS (SELECT 1 FROM job_intents li WHERE li.job_id = ${jobIdColumn}
                    AND (li.finished_at IS NULL OR li.status NOT IN ('succeeded', 'dead_lettered', 'cancelled')))
        OR EXISTS (SELECT 1 FROM dead_letters ld WHERE ld.job_id = ${jobIdColumn} AND ld.state IN ('open', 'replaying')))`;
}

/** Days (from the database clock) as a parameter: `olderThan('created_at', 1)` is `created_at < now() - $1 days`. */
export function olderThan(column: string, param: number): string {
  return `${column} < now() - $${param}::float8 * interval '1 day'`;
}

/** Which rows of a table one retention batch may delete. */
export interface ExpiredRows {
  table: string;
  /** The column whose age decides (older than the retention days). */
  age: string;
  /** The job the row belongs to: rows of a live job are kept (`jobIsLive`). */
  job?: string;
  /** A further condition on the row (alias `t`), e.g. only settled notifications. */
  where?: string;
}

/**
 * One batch of the retention cleanup, the statement every table's shares: at most `limit` rows
 * older than `days` (and of jobs that are not live, where rows belong to a job), by `ctid`, so a
 * batch is one short statement however large the table. Returns the rows deleted.
 */
export async function deleteExpired(db: Db, rows: ExpiredRows, days: number, limit: number): Promise<number> {
  const conditions = [
    ...(rows.where ? [rows.where] : []),
    olderThan(`t.${rows.age}`, 1),
    ...(rows.job ? [`NOT ${jobIsLive(`t.${rows.job}`)}`] : []),
  ];
  const r = await db.query(
    `DELETE FROM ${rows.table} WHERE ctid IN (SELECT ctid FROM ${rows.table} t WHERE ${conditions.join(' AND ')} LIMIT $2)`,
    [days, limit],
  );
  return r.rowCount ?? 0;
}
