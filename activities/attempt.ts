import { AsyncLocalStorage } from 'node:async_hooks';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { isConnectionError } from '../lib/db.js';
import { DurableJobsError, NonRetryableError, RetryableError, type UpstreamErrorDetails } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { attemptMarginMs, chooseDelay, exceedsBudget } from '../lib/retry.js';
import { recordAttempt } from '../store/attempts.js';
import { markRetrying } from '../store/intents.js';
import type { AttemptFence } from '../store/fence.js';
import type { JobBudget } from '../contract/job-types.js';

/** Delay after an attempt failed because our own Postgres was unreachable. */
const DATABASE_RETRY_MS = 5_000;

export interface AttemptDeps {
  pool: pg.Pool;
  log: Logger;
}

/**
 * The attempt a step runs: for a local activity, its number as Postgres gave it (its lease row,
 * activities/job-steps.ts), since the SDK numbers a local activity's attempts from 1 again in
 * each workflow task that runs it, so after a lost workflow task its count says nothing about
 * the attempt it took over from; and the step's attempts before this schedule (`offset`,
 * `SlotWaitArgs`: a schedule after a wait for a concurrency slot counts on from the last).
 */
const attemptScope = new AsyncLocalStorage<{ attempt?: number; offset: number }>();

/** Runs a step with room for its Postgres-numbered attempt (`setLocalAttempt`) and its schedule's offset. */
export function withAttemptScope<T>(offset: number, fn: () => Promise<T>): Promise<T> {
  return attemptScope.run({ offset }, fn);
}

export function setLocalAttempt(n: number): void {
  const s = attemptScope.getStore();
  if (s) s.attempt = n;
}

/** This schedule's attempt: Temporal's, or for a local activity's step the one Postgres gave it. The fence's number. */
function scheduleAttempt(): number {
  return attemptScope.getStore()?.attempt ?? Context.current().info.attempt;
}

/** The step's attempts before this schedule (`SlotWaitArgs.attemptOffset`); 0 outside a step's scope. */
export function attemptOffset(): number {
  return attemptScope.getStore()?.offset ?? 0;
}

/** The job's attempt number for this step: the schedule's attempt plus the attempts before this schedule. */
export function attemptNumber(): number {
  return scheduleAttempt() + attemptOffset();
}

/** This attempt's fence (store/fence.ts); undefined outside an activity. */
export function currentFence(): AttemptFence | undefined {
  try {
    const info = Context.current().info;
    if (!info.workflowExecution) return undefined;
    return {
      workflowId: info.workflowExecution.workflowId,
      runId: info.workflowExecution.runId,
      activityId: info.activityId,
      // The lease rows number the attempts of one schedule (one activity ID): no offset here.
      attempt: scheduleAttempt(),
    };
  } catch {
    return undefined;
  }
}

export interface FailureDetails {
  errorClass: string;
  statusCode?: number;
  delayMs?: number;
  budgetExhausted?: boolean;
}

/**
 * Keeps the lease alive while `fn` runs: heartbeats are the lease, and a worker that dies
 * stops sending them, so the server hands the attempt to another worker after
 * `heartbeatTimeout`. The SDK throttles the actual RPCs.
 */
export async function withHeartbeat<T>(fn: () => Promise<T>, details?: { step: string; progress?: unknown }): Promise<T> {
  const ctx = Context.current();
  // A local activity has no heartbeat (the SDK ignores it): its lease is its workflow task.
  if (ctx.info.isLocal) return fn();
  const every = Math.max(200, Math.min(2_000, (ctx.info.heartbeatTimeoutMs ?? 10_000) / 4));
  // The step in the details tells the next attempt which step a lost attempt was running;
  // `details` is read at each beat, so a step's latest progress report (`ctx.progress`) rides along.
  // No heartbeat at once: the first one goes out after `every` (at most 2 s, well inside the
  // heartbeat timeout), which saves one heartbeat RPC (a history write) per attempt. The
  // step of an attempt lost before its first heartbeat comes from its lease row instead.
  const timer = setInterval(() => ctx.heartbeat(details), every);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Turns an error into the failure Temporal acts on, and records the attempt first.
 * The delay is chosen here, in the one retry layer: `Retry-After` when the upstream gave
 * one, else full jitter; and if that delay would overrun the elapsed budget, the attempt
 * stops now as non-retryable (`RetryBudgetExhausted`) instead of sleeping into the cap.
 */
export async function failAttempt(
  deps: AttemptDeps,
  job: { jobId: string; step: string; budget: JobBudget; startedAt: Date },
  err: unknown,
): Promise<never> {
  const ctx = Context.current();
  // A cancelled attempt (the job was cancelled, or the server lost its lease) is no failure
  // of the upstream: record nothing, classify nothing, let the SDK report the cancellation.
  // Except at a worker's shutdown deadline: that attempt ends here, so it says so (its row,
  // the job's `retrying`) and retries on another worker now instead of after its lease.
  if (err instanceof CancelledFailure || ctx.cancellationSignal.aborted) {
    if (!ctx.cancellationDetails?.workerShutdown) throw err;
    err = new RetryableError('the worker shut down before this attempt finished', { errorClass: 'worker_shutdown' }, { cause: err });
  }
  const info = ctx.info;
  const now = Date.now();
  // A local activity's step counts its attempts in Postgres: a takeover does not reset the cap.
  // A schedule after a slot wait has its cap lowered by the attempts before it (`offset`).
  const raw = Math.max(info.attempt, scheduleAttempt());
  const attempt = raw + attemptOffset();
  const lastAttempt = info.retryPolicy?.maximumAttempts ? raw >= info.retryPolicy.maximumAttempts : false;
  const base = { jobId: job.jobId, step: job.step, attempt, startedAt: job.startedAt };

  if (err instanceof RetryableError || !(err instanceof DurableJobsError)) {
    // Our own Postgres unreachable mid-attempt: retry, but not in a burst that spends the
    // attempt cap before a restart finishes.
    const retryable =
      err instanceof RetryableError
        ? err
        : isConnectionError(err)
          ? new RetryableError(
              (err as Error).message,
              { errorClass: 'database_unavailable', retryAfterMs: DATABASE_RETRY_MS },
              { cause: err },
            )
          : new RetryableError((err as Error)?.message ?? String(err), { errorClass: 'internal_error' }, { cause: err });
    const { delayMs, source: delaySource } = chooseDelay(attempt, retryable.details.retryAfterMs, {
      baseMs: job.budget.backoffBaseMs,
      capMs: job.budget.backoffCapMs,
    });
    const deadline = info.scheduleToCloseTimeoutMs ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : undefined;
    const details: FailureDetails = { errorClass: retryable.details.errorClass, statusCode: retryable.details.statusCode, delayMs };
    const said = upstreamSaid(retryable.details);
    if (exceedsBudget(now, delayMs, deadline, attemptMarginMs(now - job.startedAt.getTime())) || lastAttempt) {
      details.budgetExhausted = true;
      await safeRecord(deps, {
        ...base,
        outcome: 'non_retryable',
        errorClass: details.errorClass,
        statusCode: details.statusCode,
        ...said,
      });
      const why = lastAttempt
        ? `attempt cap of ${(info.retryPolicy?.maximumAttempts ?? 0) + attempt - raw} reached`
        : `next delay ${delayMs} ms would pass the elapsed budget`;
      deps.log.warn({ jobId: job.jobId, step: job.step, attempt, errorClass: details.errorClass }, `retry budget exhausted: ${why}`);
      throw ApplicationFailure.create({
        message: `${retryable.message}; ${why}`,
        type: 'RetryBudgetExhausted',
        nonRetryable: true,
        details: [details],
      });
    }
    await safeRecord(deps, {
      ...base,
      outcome: 'retryable',
      errorClass: details.errorClass,
      statusCode: details.statusCode,
      delayMs,
      delaySource,
      ...said,
    });
    const marked = await markRetrying(
      deps.pool,
      job.jobId,
      attempt,
      { errorClass: details.errorClass, message: retryable.message, statusCode: details.statusCode },
      new Date(now + delayMs),
      currentFence(),
    ).catch(() => undefined);
    if (marked === false)
      deps.log.warn(
        { jobId: job.jobId, step: job.step, attempt },
        'stale attempt: a newer attempt superseded it; its status write was refused',
      );
    deps.log.info(
      { jobId: job.jobId, step: job.step, attempt, errorClass: details.errorClass, statusCode: details.statusCode, delayMs },
      'attempt failed; retrying',
    );
    throw ApplicationFailure.create({
      message: retryable.message,
      type: 'RetryableError',
      nonRetryable: false,
      nextRetryDelay: delayMs,
      details: [details],
    });
  }

  const errorClass = err instanceof NonRetryableError ? err.details.errorClass : err.code;
  const statusCode = err instanceof NonRetryableError ? err.details.statusCode : undefined;
  await safeRecord(deps, {
    ...base,
    outcome: 'non_retryable',
    errorClass,
    statusCode,
    ...(err instanceof NonRetryableError ? upstreamSaid(err.details) : {}),
  });
  deps.log.warn({ jobId: job.jobId, step: job.step, attempt, errorClass, statusCode }, 'attempt failed permanently');
  throw ApplicationFailure.create({
    message: err.message,
    type: err.name,
    nonRetryable: true,
    details: [{ errorClass, statusCode } satisfies FailureDetails],
  });
}

/** The upstream and its own code, for the attempt's row; neither goes into the Temporal failure (the row is the evidence). */
function upstreamSaid(d: UpstreamErrorDetails): UpstreamErrorDetails {
  return {
    ...(d.upstream ? { upstream: d.upstream } : {}),
    ...(d.providerCode ? { providerCode: d.providerCode } : {}),
  };
}

/** Recording is evidence, not control flow: a failed insert (Postgres down) must not mask the real error. */
async function safeRecord(deps: AttemptDeps, a: Parameters<typeof recordAttempt>[1]): Promise<void> {
  await recordAttempt(deps.pool, a).catch((e: Error) => deps.log.warn({ jobId: a.jobId, err: e.message }, 'could not record attempt'));
}
