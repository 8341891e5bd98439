import type { Db } from '../lib/db.js';
import type { StoredProgress } from '../contract/job-types.js';
import { TERMINAL } from './intent-attempts.js';

/**
 * The latest progress a step reported (migration 0037), stored on the job's row. Not once the
 * job has finished: a late write of a stale attempt must not put "3 of 10" beside a result.
 * Not fenced by attempt otherwise: progress is what a user watches, not evidence, and the
 * newest attempt's next report overwrites a stale one's within a second.
 */
export async function recordProgress(db: Db, jobId: string, progress: StoredProgress): Promise<void> {
  await db.query({
    name: 'record-progress',
    text: `UPDATE job_intents SET progress = $2, progress_at = now() WHERE job_id = $1 AND status NOT IN ${TERMINAL}`,
    values: [jobId, JSON.stringify(progress)],
  });
}
