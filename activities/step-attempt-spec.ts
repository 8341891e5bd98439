/**
 * What a step attempt (activities/step-attempt.ts) is of and runs with: Temporal behind
 * `AttemptEnv`, Postgres behind `AttemptStore`, so its transitions are unit-tested against fakes.
 */
import { ApplicationFailure } from '@temporalio/activity';
import {
  ADMISSION_WAIT_FAILURE,
  SLOT_WAIT_FAILURE,
  type ConcurrencyLimits,
  type JobBudget,
  type SlotWaitDetails,
  type StepArgs,
  type StepWait,
} from '../contract/job-types.js';
import { isConnectionError } from '../lib/db.js';
import { NotAdmittedError, RetryableError, SlotUnavailableError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { AttemptStore } from '../store/step-attempt.js';
import type { FallbackPlan } from './fallback.js';
import type { LeaseScope } from './lease-tracking.js';
import type { Provider } from './provider.js';
import type { Answer, EffectRequest, EffectResult } from './upstream-call.js';

/** What the attempt needs of Temporal (activities/attempt.ts `temporalEnv`; a fake in unit tests). */
export interface AttemptEnv {
  /** The schedule's attempt as Temporal numbers it. */
  scheduleAttempt: number;
  /** The activity's identity, for the fence; undefined outside a workflow's activity. */
  activity: { workflowId: string; runId: string; activityId: string } | undefined;
  /** The retry policy's cap and the schedule-to-close deadline (epoch ms), if any. */
  maximumAttempts: number | undefined;
  deadlineMs: number | undefined;
  /** The activity's cancellation. */
  signal: AbortSignal;
  sleep(ms: number): Promise<void>;
  /** Runs `fn` keeping the lease alive (heartbeats carrying `details`). */
  heartbeat<T>(fn: () => Promise<T>, details: { step: string; progress?: unknown }): Promise<T>;
  cancellation(): { cancelled: boolean; workerShutdown: boolean };
  /** Signals the job a freed slot woke (a hint: not awaited, a lost one costs that job its timer's wait). */
  wake(jobId: string | null | undefined): void;
}

export interface AttemptDeps {
  store: AttemptStore;
  env: AttemptEnv;
  log: Logger;
  /** The worker's provider (`PROVIDER_URL`): only effects in the simulator's dialect (`ctx.effect(step, path, body)`) use it. */
  provider?: Provider | undefined;
  fallbackProvider?: Provider | undefined;
}

/** What the attempt is of: the job, the step, and what its first statement and its effects need. */
export interface AttemptOf {
  args: Pick<StepArgs, 'jobId' | 'tenantId'> &
    Partial<Pick<StepArgs, 'jobType' | 'effectScope' | 'slotWait' | 'admitInStep' | 'holdIfPaused'>>;
  step: string;
  budget?: JobBudget | undefined;
  startedAt?: Date;
  /** Read the input in the first statement. */
  prefetchInput?: boolean;
  /** Its effects' concurrency caps; none: its effects take no slot. */
  slots?: { limits: ConcurrencyLimits; total?: number | undefined } | undefined;
  /** The job type's declaration for `ctx.effect(step, path, body)`, and whether it declares a fallback. */
  upstream?: { idempotentByKey: boolean; lookupByKey: boolean } | undefined;
  declaresFallback?: boolean;
  /** The attempt's lease row, written by its first statement (activities/lease-tracking.ts). */
  lease?: LeaseScope | undefined;
  /** A local activity (the fast path): Postgres numbers its attempts. */
  local?: boolean;
}

/** One effect as the step asks for it. */
export type EffectAsk = EffectRequest & {
  step: string;
  timeoutMs: number;
  /** The key fixed when the effect was planned (an outbox row's); default `effectScope:step`. */
  effectKey?: string | undefined;
  /** Hand the success to the step's last statement (`EffectOptions.storeWithResult`). */
  storeWithResult?: boolean | undefined;
  /** The operator's fallback decision; default: from the attempt's first statement, when the type declares a fallback. */
  fallback?: FallbackPlan | undefined;
};

export type AttemptPhase = 'new' | 'started' | 'running' | 'completed' | 'failed';

/** How long an attempt waits, heartbeating, for our own Postgres before it gives up. */
const DATABASE_WAIT_MS = 60_000;

/**
 * Runs the attempt's first write, waiting while our own Postgres is unreachable (a restart, a
 * failover). Our database being down says nothing about the upstream: burning the job's
 * retry attempts on it would dead-letter healthy jobs during a short Postgres restart.
 */
export async function whenDatabaseIsBack<R>(deps: Pick<AttemptDeps, 'env' | 'log'>, jobId: string, write: () => Promise<R>): Promise<R> {
  const deadline = Date.now() + DATABASE_WAIT_MS;
  for (let pause = 250; ; pause = Math.min(2_000, pause * 2)) {
    try {
      return await write();
    } catch (err) {
      if (!isConnectionError(err) || Date.now() + pause > deadline) throw err;
      deps.log.warn({ jobId, err: (err as Error).message }, 'postgres unreachable; waiting before the attempt starts');
      await deps.env.sleep(pause);
    }
  }
}

/**
 * A wait goes back to the workflow: no slot free (`SlotUnavailableError`), or not admitted
 * (`NotAdmittedError`). A `StepWait` for a workflow that reads them (`SlotWaitArgs.waitsReturn`),
 * else the failure a workflow from before expects. Undefined: not a wait.
 */
export function waitOf(err: unknown, args: AttemptOf['args'], attempt: number): StepWait | undefined {
  const waitsReturn = args.slotWait?.waitsReturn === true;
  if (err instanceof SlotUnavailableError) {
    if (waitsReturn) return { durableJobsWait: 'slot', message: err.message, attempt };
    throw slotWait(err, attempt);
  }
  if (!(err instanceof NotAdmittedError)) return undefined;
  // A held later step says which job attempt did not run (the workflow keeps the numbering).
  if (waitsReturn)
    return { durableJobsWait: 'admission', message: err.message, ...(args.holdIfPaused && !args.admitInStep ? { attempt } : {}) };
  throw notAdmitted(err);
}

/**
 * The first step's statement found the job not admitted at once: the workflow runs the gate
 * (workflows/step-activities.ts) and schedules the step again. For a workflow from before
 * `SlotWaitArgs.waitsReturn`, this failure: not retryable, so Temporal spends no attempt on it.
 */
function notAdmitted(err: NotAdmittedError): ApplicationFailure {
  return ApplicationFailure.create({ message: err.message, type: ADMISSION_WAIT_FAILURE, nonRetryable: true });
}

/**
 * No concurrency slot was free: the workflow waits and schedules the step again as the same job
 * attempt. For a workflow from before `waitsReturn`, this failure: not retryable, so Temporal
 * spends no attempt of the step's cap on it. No attempt row either (the wait is no outcome of the upstream's).
 */
function slotWait(err: SlotUnavailableError, attempt: number): ApplicationFailure {
  return ApplicationFailure.create({
    message: err.message,
    type: SLOT_WAIT_FAILURE,
    nonRetryable: true,
    details: [{ errorClass: 'slot_unavailable', attempt } satisfies SlotWaitDetails],
  });
}

export function resultOf(effectKey: string, a: Answer, via: EffectResult['via']): EffectResult {
  return {
    effectKey,
    providerId: a.providerId,
    providerRequestId: a.providerRequestId,
    response: a.response as Record<string, unknown>,
    via,
  };
}

/**
 * A local activity's attempt takes the number its lease row got: that number fences every later
 * write of the attempt, so an attempt whose workflow task was lost and that lives on is refused
 * once the attempt that took over has started. If the attempt before it left its lease open, it
 * was lost: flagged and counted, as a leased activity's next attempt does. Returns the number.
 */
export async function numberLocal(
  deps: Pick<AttemptDeps, 'store' | 'log'>,
  lease: LeaseScope,
  n: number | null,
  step: string,
  offset: number,
): Promise<number> {
  if (n === null) throw new RetryableError('another attempt of this step started at the same moment', { errorClass: 'attempt_race' });
  lease.key.attempt = n;
  if (n === 1) return n;
  try {
    if (await deps.store.recordLost({ ...lease.key, attempt: n - 1 }, step, offset))
      deps.log.warn({ jobId: lease.key.jobId, step, attempt: n - 1 }, 'previous attempt lost its workflow task (no outcome recorded)');
  } catch (err) {
    deps.log.warn({ jobId: lease.key.jobId, err: (err as Error).message }, 'could not record lease evidence');
  }
  return n;
}
