/**
 * The Temporal side of an attempt: the environment the step attempt (activities/step-attempt.ts)
 * runs in, the heartbeat that is its lease, and `failAttempt` for the activities that are no
 * step (the outbox).
 */
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { pgAttemptStore } from '../store/step-attempt.js';
import { slotFreedSignal } from '../contract/messages.js';
import type { JobBudget } from '../contract/job-types.js';
import type { Provider } from './provider.js';
import { StepAttempt, type AttemptDeps as StepAttemptDeps, type AttemptEnv } from './step-attempt.js';

export interface AttemptDeps {
  pool: pg.Pool;
  log: Logger;
}

/** A step attempt's dependencies in the current activity: our Postgres, Temporal, the worker's providers. */
export function attemptDeps(
  deps: AttemptDeps & { provider?: Provider | undefined; fallbackProvider?: Provider | undefined },
): StepAttemptDeps {
  return {
    store: pgAttemptStore(deps.pool),
    env: temporalEnv(deps.log),
    log: deps.log,
    provider: deps.provider,
    fallbackProvider: deps.fallbackProvider,
  };
}

/** The current activity as the attempt sees it. */
export function temporalEnv(log: Logger): AttemptEnv {
  const ctx = Context.current();
  const info = ctx.info;
  return {
    scheduleAttempt: info.attempt,
    activity: info.workflowExecution && {
      workflowId: info.workflowExecution.workflowId,
      runId: info.workflowExecution.runId,
      activityId: info.activityId,
    },
    maximumAttempts: info.retryPolicy?.maximumAttempts || undefined,
    deadlineMs: info.scheduleToCloseTimeoutMs ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : undefined,
    signal: ctx.cancellationSignal,
    sleep: (ms) => ctx.sleep(ms),
    heartbeat: (fn, details) => withHeartbeat(fn, details),
    cancellation: () => ({ cancelled: ctx.cancellationSignal.aborted, workerShutdown: ctx.cancellationDetails?.workerShutdown === true }),
    wake: (jobId) => wakeSlotWaiter(ctx, log, jobId),
  };
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
 * Turns an error into the failure Temporal acts on, and records the attempt first: the one
 * retry layer (activities/step-attempt.ts `fail`), for an activity that is not a job step.
 */
export async function failAttempt(
  deps: AttemptDeps,
  job: { jobId: string; step: string; budget: JobBudget; startedAt: Date },
  err: unknown,
): Promise<never> {
  const attempt = new StepAttempt(attemptDeps(deps), {
    args: { jobId: job.jobId, tenantId: '' },
    step: job.step,
    budget: job.budget,
    startedAt: job.startedAt,
  });
  await attempt.fail(err);
  throw new Error('unreachable: a failure outside a step is never a wait');
}

/**
 * Signals the workflow of the job a freed slot woke (`releaseSlot` and the statements that carry
 * its CTE name it), so it tries again now instead of at the end of its back-off. Not awaited:
 * the signal is a hint, and a lost one (the job finished meanwhile, Temporal unreachable) costs
 * that job the rest of its timer's wait, nothing else.
 */
function wakeSlotWaiter(ctx: Context, log: Logger, jobId: string | null | undefined): void {
  if (!jobId) return;
  let client;
  try {
    client = ctx.client;
  } catch {
    return; // no client to send it with
  }
  client.workflow
    .getHandle(jobId)
    .signal(slotFreedSignal)
    .catch((e: Error) => log.info({ jobId, err: e.message }, 'could not wake a job waiting for a slot; its timer will'));
}
