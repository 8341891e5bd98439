import type { IntentRow } from '../store/intents.js';
import type { JobState } from '../contract/job-types.js';

/** What a user sees of a job. Timestamps are ISO 8601 UTC. */
export interface JobStatus {
  jobId: string;
  type: string;
  status: JobState;
  priority: string;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  result?: unknown;
  error?: { errorClass: string; message: string; statusCode?: number };
  statusReason?: string;
  nextAttemptAt?: string;
  notification?: string;
  replayOf?: string;
  /** A rerun: the finished job it reruns, and the effect step it reran from (the effects before it were reused). */
  rerunOf?: string;
  rerunFromStep?: string;
  /** Time spent waiting before the first attempt started executing (created, or a delayed job's time → first started; includes any deferral and any wait for a concurrency slot). */
  queuedMs?: number;
  /** When the first attempt started executing (UTC): queue time ends, execution time begins. */
  firstStartedAt?: string;
  /** Time spent executing: the sum of the attempts' execution spans (worker and upstream time), never slot waits, back-offs or queue time. */
  executionMs?: number;
  finishedAt?: string;
  /** While `deferred`: since when it has been held back (the reason is `statusReason`). */
  deferredSince?: string;
  /** After a deferral: how long the degradation gate held it back (part of `queuedMs`). */
  deferredMs?: number;
  deadLetterId?: string;
  /** Job types with a fallback: the upstream its effects went to ('fallback' once any did). */
  upstream?: 'primary' | 'fallback';
  /** Why: who enabled the fallback and since when, or why the job stayed on the primary. */
  upstreamReason?: string;
  /** Only on request (`allowStale`), never in `result`: an earlier job's result, labelled with its time. */
  staleResult?: StaleResult;
  nextPollSeconds?: number;
  /** The stage the job is in or failed at (intake, claim, side effects, completion), in words, with its figure. */
  stage?: string;
  /** The next expected step, in words. */
  nextStep?: string;
  /** When the job was replayed (dead letter): the newest replay job. */
  replayJobId?: string;
  /** A delayed job (`runAt` / `delaySeconds`): when it may start (UTC). Status `scheduled` until then. */
  scheduledFor?: string;
  /** The business tags its submitter set. */
  tags?: Record<string, string>;
  /** The latest progress a step reported (`ctx.progress`), with the step and when it was stored (UTC). */
  progress?: JobProgress;
  /**
   * Only while the job is unfinished and Temporal shows it: what holds it in the engine, which
   * Postgres (and so `stage`) cannot see. Absent when nothing is wrong or Temporal did not answer
   * in time (services/job-engine.ts).
   */
  engine?: EngineCondition;
}

/** Something in the engine holds an unfinished job (issue 40 §5). */
export interface EngineCondition {
  /**
   * `workflow-task-failing`: the engine fails the job's workflow task again and again (a
   * non-deterministic deploy, a worker without the job's type, a broken bundle); `no-poller`:
   * no worker polls for the job's type; `activity-paused`: an operator paused a step in Temporal.
   */
  kind: 'workflow-task-failing' | 'no-poller' | 'activity-paused';
  /** One line: what holds the job and what happens next (the failure's first line, shortened; never a stack). */
  message: string;
  /** `workflow-task-failing`: the build ID of the workers that fail it, when known. */
  buildId?: string;
  /** `activity-paused`: since when (UTC). */
  since?: string;
}

/** What a step last reported of its progress. */
export interface JobProgress {
  done: number;
  total?: number;
  note?: string;
  step: string;
  at: string;
}

/** The last successful result of the same tenant, type and input: not this job's, and not live. */
export interface StaleResult {
  stale: true;
  result: unknown;
  at: string;
  fromJobId: string;
}

const FINAL: JobState[] = ['succeeded', 'dead_lettered', 'cancelled'];

/**
 * The status a user sees: the row's, except that a delayed job whose row says `queued` (no
 * worker has it yet) is `scheduled` while its time is in the future. Once the time passes it
 * is `queued` again, waiting for a worker, with nothing written: the store's lists derive it
 * the same way from the database clock (store/job-pages.ts).
 */
export function visibleState(row: Pick<IntentRow, 'status' | 'run_at'>, now = new Date()): JobState {
  return row.status === 'queued' && row.run_at && row.run_at.getTime() > now.getTime() ? 'scheduled' : row.status;
}

export function toJobStatus(
  row: IntentRow & {
    dead_letter_id?: string | null;
    deferred_at?: Date | null;
    admitted_at?: Date | null;
    upstream?: 'primary' | 'fallback' | null;
    upstream_reason?: string | null;
  },
  now = new Date(),
): JobStatus {
  const status = visibleState(row, now);
  const s: JobStatus = {
    jobId: row.job_id,
    type: row.job_type,
    status,
    priority: row.priority,
    attempts: row.attempts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
  if (row.result != null) s.result = row.result;
  if (row.last_error && row.status !== 'succeeded') s.error = row.last_error;
  if (row.status_reason) s.statusReason = row.status_reason;
  if (row.next_attempt_at && row.status === 'retrying') s.nextAttemptAt = row.next_attempt_at.toISOString();
  if (row.notification_state) s.notification = row.notification_state;
  if (row.replay_of) s.replayOf = row.replay_of;
  if (row.rerun_of) s.rerunOf = row.rerun_of;
  if (row.rerun_from_step) s.rerunFromStep = row.rerun_from_step;
  // A delayed job queues from its time on: the delay it asked for is not queue time.
  const queuedFrom = Math.max(row.created_at.getTime(), row.run_at?.getTime() ?? 0);
  if (row.first_started_at) s.queuedMs = Math.max(0, row.first_started_at.getTime() - queuedFrom);
  if (row.first_started_at) s.firstStartedAt = row.first_started_at.toISOString();
  if (row.finished_at) s.finishedAt = row.finished_at.toISOString();
  // The sum of the attempts' execution spans; jobs finished before it was kept: first start → finish.
  if (row.first_started_at && row.finished_at) {
    s.executionMs =
      row.execution_ms != null ? Number(row.execution_ms) : Math.max(0, row.finished_at.getTime() - row.first_started_at.getTime());
  }
  if (row.status === 'deferred' && row.deferred_at) s.deferredSince = row.deferred_at.toISOString();
  if (row.deferred_at && row.admitted_at) s.deferredMs = Math.max(0, row.admitted_at.getTime() - row.deferred_at.getTime());
  if (row.dead_letter_id) s.deadLetterId = row.dead_letter_id;
  if (row.upstream) s.upstream = row.upstream;
  if (row.upstream_reason) s.upstreamReason = row.upstream_reason;
  if (row.run_at) s.scheduledFor = row.run_at.toISOString();
  if (row.tags) s.tags = row.tags;
  if (row.progress && row.progress_at) s.progress = { ...row.progress, at: row.progress_at.toISOString() };
  if (!FINAL.includes(row.status)) s.nextPollSeconds = pollAfterSeconds(status, row.run_at, now);
  return s;
}

/** When to look again: a scheduled job at its time, a deferred one in 30 s, a retrying one in 5 s, others in 1 s. */
export function pollAfterSeconds(status: JobState, runAt: Date | null, now: Date): number {
  if (status === 'scheduled' && runAt) return Math.max(1, Math.ceil((runAt.getTime() - now.getTime()) / 1000));
  return status === 'deferred' ? 30 : status === 'retrying' ? 5 : 1;
}
