/**
 * Fencing for every write an attempt makes. Temporal refuses a stale attempt's completion
 * (TEMPORAL-NOTES §2), but not its side effects: a worker that was paused or partitioned
 * past its lease keeps running and writing. An attempt is stale once a newer attempt of the
 * same activity (same workflow run and activity ID) has started, which the newer attempt
 * records in `activity_leases` before it writes anything (activities/lease-tracking.ts).
 * So each fenced write carries this condition and a stale attempt's write changes nothing.
 */
export interface AttemptFence {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
}

/** The SQL condition, reading the fence from parameters `$i..$i+3`; no fence (NULLs) always passes. */
export function notSuperseded(i: number): string {
  return `($${i}::text IS NULL OR NOT EXISTS (SELECT 1 FROM activity_leases l
            WHERE l.job_id = $${i} AND l.run_id = $${i + 1} AND l.activity_id = $${i + 2} AND l.attempt > $${i + 3}::int))`;
}

export function fenceParams(f: AttemptFence | undefined): [string | null, string | null, string | null, number | null] {
  return f ? [f.workflowId, f.runId, f.activityId, f.attempt] : [null, null, null, null];
}
