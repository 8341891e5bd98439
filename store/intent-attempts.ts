/**
 * `job_intents`, the attempt's transitions: running (fenced), the start of an attempt with its
 * admission and lease, execution time, waiting for a slot, retrying. The rest of the table's
 * statements are in `intents.ts`; these are the ones an attempt makes, kept together.
 */
import { fenceParams, notSuperseded, type AttemptFence } from './fence.js';
import type { Db } from '../lib/db.js';
import { leaseStartedCte, leaseStartedParams, type LeaseStart } from './activity-leases.js';
import { heldByPauseSql, heldByScopeSql, SETTING_COLUMNS, toSetting, type DegradationSetting, type SettingRow } from './degradation.js';

/** Terminal states never move again: a late writer cannot resurrect a finished job. */
export const TERMINAL = `('succeeded', 'dead_lettered', 'cancelled')`;

/**
 * Only for an attempt no newer one has superseded. The attempt count rises even on a
 * finished job: an attempt that runs after the result was stored (its completion never
 * reached Temporal, e.g. in an outage) is an attempt too, and job_attempts holds its row.
 * The status itself never leaves a terminal state. Returns false when the write was refused.
 */
export async function markRunning(
  db: Db,
  jobId: string,
  attempt: number,
  fence?: AttemptFence,
  slot?: { attemptStartedAt: Date },
): Promise<boolean> {
  // After a wait for a concurrency slot (`slot`), execution starts now: if this attempt is
  // the one that set first_started_at (at its start), it moves here, so the wait counts as
  // queue time, not execution time.
  const r = await db.query(
    `UPDATE job_intents
        SET attempts = greatest(attempts, $2),
            status = CASE WHEN status IN ${TERMINAL} THEN status ELSE 'running' END,
            status_reason = CASE WHEN status IN ${TERMINAL} THEN status_reason END,
            next_attempt_at = CASE WHEN status IN ${TERMINAL} THEN next_attempt_at END,
            first_started_at = CASE WHEN status IN ${TERMINAL} THEN first_started_at
                                    WHEN $7::timestamptz IS NOT NULL AND first_started_at >= $7::timestamptz THEN now()
                                    ELSE coalesce(first_started_at, now()) END,
            updated_at = now()
      WHERE job_id = $1 AND (status NOT IN ${TERMINAL} OR attempts < $2) AND ${notSuperseded(3)}`,
    [jobId, attempt, ...fenceParams(fence), slot?.attemptStartedAt ?? null],
  );
  return r.rowCount === 1;
}

export interface AttemptStart {
  /** Whether the status write landed (false: a newer attempt superseded this one, or the job finished). */
  marked: boolean;
  /** The intent exists (false only in the intake's delete-and-reinsert race). */
  found: boolean;
  /** The job's input, when asked for. */
  input: unknown;
  /** The degradation setting as this attempt starts (its fallback decision). */
  setting: DegradationSetting;
  /**
   * The attempt's number: the one given, or for a local activity's attempt the one its lease
   * row took (null when a concurrent attempt took that number first).
   */
  attempt: number | null;
  /** False only when the gate's question was asked (`admitCheck`) and the job is not admitted at once: nothing was written. */
  admitted: boolean;
  /** The `synchronous_commit` the statement committed with: `off` for an evidence-only start (`asyncCommit`). */
  commitMode: string;
}

/** What an attempt's first statement does besides marking it running (`startAttempt`). */
export interface AttemptStartOptions {
  /** Read the job's input too. Default false. */
  withInput?: boolean;
  /** Write the attempt's lease row in the same statement. */
  lease?: LeaseStart | undefined;
  /** The step is scheduled again after a wait for a slot and the job stays `queued`. Default false. */
  stillWaiting?: boolean;
  /** Ask the degradation gate's question. Default false. */
  admitCheck?: boolean;
  /** Ask only whether a pause holds the job (a later step of an admitted job). Default false. */
  holdCheck?: boolean;
  /** Commit without waiting for the WAL flush (evidence only). Default false. */
  asyncCommit?: boolean;
}

/**
 * The degradation gate's question for a job that has not started (activities/admission.ts
 * `checkAdmission`, the "admit at once" case), asked inside the attempt's first statement when
 * the gate is folded into the first step (`StepArgs.admitInStep`). Not admitted at once: its
 * priority is paused, it was deferred before, it holds a ramp reservation, or others of its
 * priority are still deferred (it queues behind them). Each of those goes to the full gate in
 * the workflow. A job already running (a later attempt) is always admitted: only a job that has
 * not started can be deferred. CASE, not OR: for a started job nothing below is evaluated.
 */
const ADMITTED_AT_ONCE = `CASE WHEN i.status NOT IN ('queued', 'deferred') THEN true
           ELSE NOT (i.status = 'deferred'
                     OR ${heldByPauseSql('i', 'g')}
                     OR EXISTS (SELECT 1 FROM admissions a WHERE a.job_id = i.job_id AND a.round = 0)
                     OR EXISTS (SELECT 1 FROM job_intents o WHERE o.status = 'deferred' AND o.priority = i.priority AND o.job_id <> i.job_id
                                  AND NOT ${heldByScopeSql('o', 'g')}))
           END`;

/**
 * The question every later step of an admitted job asks (`StepArgs.holdIfPaused`, issue 38 §4):
 * does a pause (its priority, its type, its tenant, or the pair) hold it now? Only that: a job
 * already admitted does not queue again behind other deferred jobs, so a step is never refused
 * for anything but a pause in force. A finished job (its notification step) is never held: the
 * gate would admit it at once and the step would be refused again, forever.
 */
const NOT_HELD = `(i.status IN ${TERMINAL} OR NOT ${heldByPauseSql('i', 'g')})`;

/**
 * An attempt's first statement: `markRunning` (same rules, no slot wait) and, in the same
 * round trip, the input (only when the step asks for it: it may be 256 KiB) and the one-row
 * degradation setting the attempt decides its upstream by. The CTE's update does not change
 * what the outer SELECT reads (input and setting are not touched by it). An exception to one
 * statement per table, kept here since the row it writes is this table's; a named statement
 * since every attempt runs it. With `lease`, the attempt's lease row (store/activity-leases.ts
 * `leaseStartedCte`) is written by the same statement: one commit and one round trip for the
 * whole start (it was four: BEGIN, the lease, this, COMMIT). The fence (store/fence.ts) needs
 * the lease row committed no later than the attempt's first other write; here they commit together.
 * With `admitCheck` it also asks the degradation gate's question (`ADMITTED_AT_ONCE`), so a job
 * admitted at once costs the gate no statement of its own.
 *
 * With `asyncCommit` the statement commits without waiting for its WAL flush
 * (`synchronous_commit = off` for its own transaction only: `set_config(..., true)`, so nothing
 * leaks to the session, and PgBouncer's transaction mode is fine). Only for what is evidence:
 * the first attempt of a schedule, whose lease row fences no earlier attempt. Such a commit is
 * visible at once and is made durable by the next synchronous commit (WAL is flushed in order),
 * so the effect's claim, which must be durable before the call, makes this start durable too. A
 * Postgres crash within the flush delay (under a second) loses at most the start's evidence: the
 * `running` mark and the lease row of an attempt that had written nothing else by then.
 */
export async function startAttempt(
  db: Db,
  jobId: string,
  attempt: number | null,
  fence: AttemptFence | undefined,
  opts: AttemptStartOptions = {},
): Promise<AttemptStart> {
  const { withInput = false, lease, stillWaiting = false, admitCheck = false, holdCheck = false, asyncCommit = false } = opts;
  // `attempt` null: the lease row numbers it (a local activity's attempt, `leaseStartedCte`).
  const att = `coalesce($2::int, (SELECT attempt FROM lease_started))`;
  // `stillWaiting`: the step is scheduled again after a wait for a slot (`SlotWaitArgs.resumed`);
  // a job still `queued` for it stays so, with its reason, until this attempt has its slot.
  const keep = `status IN ${TERMINAL} OR ($15::boolean AND status = 'queued')`;
  // With `admitCheck`, a job the gate does not admit at once gets neither its lease row nor its
  // update: the attempt has not started. Same snapshot as the update, so no pause slips between.
  // An intent not visible (yet) is not admitted either: the gate waits for it, as it always did.
  // Without the question the gate reads nothing (`$16` is a one-time filter) and admits.
  // With `holdCheck` ($18) the gate asks only whether a pause holds the job (`NOT_HELD`).
  const admitted = `coalesce((SELECT admitted FROM gate), NOT ($16::boolean OR $18::boolean))`;
  const r = await db.query<
    SettingRow & { marked: boolean; found: boolean; input: unknown; attempt: number | null; admitted: boolean; commit_mode: string }
  >({
    name: 'start-attempt',
    text: `WITH commit_mode AS (
             SELECT CASE WHEN $17::boolean THEN set_config('synchronous_commit', 'off', true)
                         ELSE current_setting('synchronous_commit') END AS mode),
           gate AS (
             SELECT CASE WHEN $16::boolean THEN ${ADMITTED_AT_ONCE} ELSE ${NOT_HELD} END AS admitted
               FROM job_intents i CROSS JOIN degradation_setting g
              WHERE ($16::boolean OR $18::boolean) AND i.job_id = $1 AND g.id = 1),
           ${leaseStartedCte(8, admitted)},
           upd AS (
             UPDATE job_intents
                SET attempts = greatest(attempts, ${att}),
                    status = CASE WHEN ${keep} THEN status ELSE 'running' END,
                    status_reason = CASE WHEN ${keep} THEN status_reason END,
                    next_attempt_at = CASE WHEN status IN ${TERMINAL} THEN next_attempt_at END,
                    first_started_at = CASE WHEN status IN ${TERMINAL} THEN first_started_at ELSE coalesce(first_started_at, now()) END,
                    updated_at = now()
              WHERE job_id = $1 AND (status NOT IN ${TERMINAL} OR attempts < ${att}) AND ${notSuperseded(3)} AND ${admitted}
              RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM upd) AS marked, i.job_id IS NOT NULL AS found,
                  CASE WHEN $7::boolean THEN i.input END AS input, ${att} AS attempt, ${admitted} AS admitted,
                  (SELECT mode FROM commit_mode) AS commit_mode, ${SETTING_COLUMNS('s')}
             FROM degradation_setting s LEFT JOIN job_intents i ON i.job_id = $1
            WHERE s.id = 1`,
    values: [
      jobId,
      attempt,
      ...fenceParams(fence),
      withInput,
      ...leaseStartedParams(lease),
      stillWaiting,
      admitCheck,
      asyncCommit,
      holdCheck,
    ],
  });
  const row = r.rows[0]!;
  return {
    marked: row.marked,
    found: row.found,
    input: row.input,
    setting: toSetting(row),
    attempt: row.attempt,
    admitted: row.admitted,
    commitMode: row.commit_mode,
  };
}

/**
 * At the end of each attempt that ran (success or failure): adds its execution span, which
 * begins when the attempt could run (after any slot wait) and ends now. Back-offs between
 * attempts fall outside every span. Not fenced: a stale attempt's span was real work too.
 */
export async function addExecutionSpan(db: Db, jobId: string, spanMs: number, attemptStartedAt: Date): Promise<void> {
  // Not for an attempt that started after the job had finished (its completion was lost and
  // it reused the stored result): the job's execution time was already complete.
  await db.query({
    name: 'add-execution-span',
    text: `UPDATE job_intents SET execution_ms = coalesce(execution_ms, 0) + $2
            WHERE job_id = $1 AND (finished_at IS NULL OR finished_at >= $3)`,
    values: [jobId, Math.max(0, Math.round(spanMs)), attemptStartedAt],
  });
}

/**
 * The job waits for a concurrency slot: `queued` with the reason, never as failing. With
 * `attemptStartedAt`, a first start this attempt set goes back to NULL: the job has not
 * executed yet, so its wait is queue time (the attempt that gets the slot sets it again). The
 * attempt's lease row tells which start it set: its `started_at` is Postgres' clock, as the
 * first start's is, so the worker's clock (`attemptStartedAt`, used only without a lease row)
 * does not decide it.
 */
export async function markWaiting(db: Db, jobId: string, reason: string, fence?: AttemptFence, attemptStartedAt?: Date): Promise<boolean> {
  const r = await db.query(
    `UPDATE job_intents SET status = 'queued', status_reason = $2, updated_at = now(),
            first_started_at = CASE
              WHEN $7::timestamptz IS NOT NULL
               AND first_started_at >= coalesce((SELECT l.started_at FROM activity_leases l
                                                  WHERE l.job_id = $3 AND l.run_id = $4 AND l.activity_id = $5 AND l.attempt = $6),
                                                $7::timestamptz)
              THEN NULL ELSE first_started_at END
      WHERE job_id = $1 AND status NOT IN ${TERMINAL} AND ${notSuperseded(3)}`,
    [jobId, reason, ...fenceParams(fence), attemptStartedAt ?? null],
  );
  return r.rowCount === 1;
}

export async function markRetrying(
  db: Db,
  jobId: string,
  attempt: number,
  error: { errorClass: string; message: string; statusCode?: number },
  nextAttemptAt: Date,
  fence?: AttemptFence,
): Promise<boolean> {
  const r = await db.query(
    `UPDATE job_intents
        SET status = 'retrying', attempts = greatest(attempts, $2), last_error = $3, next_attempt_at = $4, updated_at = now()
      WHERE job_id = $1 AND status NOT IN ${TERMINAL} AND ${notSuperseded(5)}`,
    [jobId, attempt, JSON.stringify(error), nextAttemptAt, ...fenceParams(fence)],
  );
  return r.rowCount === 1;
}
