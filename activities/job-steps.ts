import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { isConnectionError } from '../lib/db.js';
import { NonRetryableError, NotAdmittedError, RetryableError, SlotUnavailableError } from '../lib/errors.js';
import { effectKeyFor } from '../lib/ids.js';
import { flagLeaseExpired, leaseEnded, type LeaseKey } from '../store/activity-leases.js';
import { recordLostAttempt } from '../store/attempts.js';
import { addExecutionSpan, loadInput, startAttempt, type AttemptStart } from '../store/intents.js';
import { writeResultFenced } from '../store/step-result.js';
import { ADMISSION_WAIT_FAILURE, SLOT_WAIT_FAILURE, type SlotWaitDetails, type StepArgs, type StepWait } from '../contract/job-types.js';
import { budgetOf } from '../job-api/define.js';
import { createProgressReporter, type ProgressReport } from '../job-api/progress.js';
import { recordProgress } from '../store/progress.js';
import type { ActivityDeps } from './deps.js';
import { effectSlot, wakeSlotWaiter } from './concurrency.js';
import { attemptNumber, attemptOffset, currentFence, failAttempt, setLocalAttempt, withAttemptScope, withHeartbeat } from './attempt.js';
import { runEffect, storeSuccess, warnStale, type EffectRequest, type EffectResult } from './effects.js';
import type { EffectCall, Upstream } from '../job-api/upstream.js';
import type { EffectSuccess } from '../store/effects.js';
import { fallbackPlan, planFrom } from './fallback.js';
import { currentLease, type LeaseScope } from './lease-tracking.js';

/** What a step needs of the worker's dependencies. */
export type StepDeps = Pick<ActivityDeps, 'pool' | 'provider' | 'fallbackProvider' | 'log' | 'jobs' | 'limits' | 'totalConcurrency'>;

export type { StepArgs } from '../contract/job-types.js';

export interface EffectOptions {
  /**
   * The step writes its result (`completeWithOutbox`) right after this effect: the provider's
   * IDs commit in that statement instead of one of their own (one commit and round trip fewer).
   * They are still in Postgres before the activity returns; if the step ends any other way, the
   * wrapper commits them before it reports the outcome. Use it only when nothing between the
   * effect and the result acknowledges anything: a crash in between leaves the effect in doubt,
   * and the next attempt re-sends it with the same key (the upstream answers from its store).
   * Default false.
   */
  storeWithResult?: boolean;
}

/** `ctx.effect(step, call, opts)`: the upstream the call goes to, and the options of every effect. */
export interface UpstreamEffectOptions extends EffectOptions {
  /** The declared upstream (`defineUpstream`, `httpUpstream`): its semantics, its classifier, its lookup. */
  upstream: Upstream;
}

export interface StepContext {
  args: StepArgs;
  attempt: number;
  startedAt: Date;
  /**
   * One external effect through a declared upstream: `call` makes the request with any client
   * (the effect key as its idempotency key, `signal` passed on) and returns the response and
   * the provider's IDs. Claimed before the call, its IDs stored before anything else, looked up
   * or re-sent or stopped when in doubt (the upstream's semantics), fenced, inside the
   * concurrency slot, once per attempt with an attempt row.
   */
  effect<R>(step: string, call: EffectCall<R>, opts: UpstreamEffectOptions): Promise<EffectResult<R>>;
  /** The same through the worker's provider (`PROVIDER_URL`, the simulator's dialect): POST `body` to `path`. */
  effect(step: string, path: string, body: Record<string, unknown>, opts?: EffectOptions): Promise<EffectResult>;
  input<T>(): Promise<T>;
  /**
   * How far the step is (`{ done, total?, note? }`): carried by the heartbeat and stored on the
   * job at most once a second (the last report also when the step ends), shown by
   * `GET /v1/jobs/{id}`, `getJob`, the console and the timeline. Returns at once; a failed
   * write is logged, never the step's failure. A bad report (`done` not a finite number >= 0,
   * a note over 200 characters) throws `ValidationError`. The note is shown to the tenant:
   * never secrets or raw input.
   */
  progress(report: ProgressReport): void;
  /** What the step's last statement (`completeWithOutbox`) writes beside the result: the span so far and the lease to end. */
  closing?: () => { spanMs: number; lease: LeaseKey | undefined };
  /** Called once that statement committed: the wrapper then writes neither again. */
  finished?: () => void;
  /** The effect success handed to that statement (`storeWithResult`); taking it leaves none for the wrapper. */
  takeEffect?: () => EffectSuccess | undefined;
}

/** How long an attempt waits, heartbeating, for our own Postgres before it gives up. */
const DATABASE_WAIT_MS = 60_000;

/**
 * Runs the attempt's first write, waiting while our own Postgres is unreachable (a restart,
 * a failover). Our database being down says nothing about the upstream: burning the job's
 * retry attempts on it would dead-letter healthy jobs during a short Postgres restart.
 */
async function whenDatabaseIsBack(deps: StepDeps, jobId: string, write: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + DATABASE_WAIT_MS;
  for (let pause = 250; ; pause = Math.min(2_000, pause * 2)) {
    try {
      return await write();
    } catch (err) {
      if (!isConnectionError(err) || Date.now() + pause > deadline) throw err;
      deps.log.warn({ jobId, err: (err as Error).message }, 'postgres unreachable; waiting before the attempt starts');
      await Context.current().sleep(pause);
    }
  }
}

/** The call form's upstream; a step that names none is a bug in the job type, not a failure of the upstream. */
function upstreamOf(step: string, opts: UpstreamEffectOptions | undefined): Upstream {
  if (!opts?.upstream)
    throw new NonRetryableError(`effect ${step}: ctx.effect(step, call, { upstream }) needs the upstream it calls`, {
      errorClass: 'configuration',
    });
  return opts.upstream;
}

/** What a step asks of its first statement. */
export interface StepOptions {
  /**
   * Read the job's input in the attempt's first statement (one round trip fewer) when the
   * step is sure to need it; otherwise `ctx.input()` reads it when called. Default false.
   */
  prefetchInput?: boolean;
}

/**
 * Wraps one step activity: marks the job running, keeps the lease (heartbeats), and turns
 * every failure into a classified, recorded Temporal failure.
 *
 * Postgres cost per attempt: its first transaction writes the lease row (with the step: the
 * next attempt's evidence if this one dies before its first heartbeat), marks the job
 * running, and reads the degradation setting (and the input when asked for) in one
 * statement, which a schedule's first attempt commits without waiting for the flush; each
 * effect commits its claim once before the call and its outcome once after;
 * `completeWithOutbox` commits the result, the outbox row, the execution span and the lease's
 * end together.
 */
export async function runStep<T>(
  deps: StepDeps,
  args: StepArgs,
  step: string,
  body: (ctx: StepContext) => Promise<T>,
  opts: StepOptions = {},
): Promise<T> {
  const info = Context.current().info;
  const offset = args.slotWait?.attemptOffset ?? 0;
  // The fast path (a local activity, README "The fast path"): no heartbeat, no lease tracking
  // around it (activities/lease-tracking.ts tracks leased activities); its lease is the workflow
  // task. The step keeps a lease row of its own, numbered by Postgres, which is its fence.
  if (info.isLocal && info.workflowExecution) {
    const lease: LeaseScope = {
      key: { jobId: info.workflowExecution.workflowId, runId: info.workflowExecution.runId, activityId: info.activityId, attempt: 0 },
      activityType: info.activityType,
      startToCloseMs: info.startToCloseTimeoutMs,
      started: false,
      ended: false,
    };
    return withAttemptScope(offset, () => runStepWith(deps, args, step, body, opts, lease, true));
  }
  return withAttemptScope(offset, () => runStepWith(deps, args, step, body, opts, currentLease(), false));
}

async function runStepWith<T>(
  deps: StepDeps,
  args: StepArgs,
  step: string,
  body: (ctx: StepContext) => Promise<T>,
  opts: StepOptions,
  lease: LeaseScope | undefined,
  local: boolean,
): Promise<T> {
  const startedAt = new Date();
  // The job's attempt: the schedule's (Temporal's, or for a local activity its lease row's,
  // numbered in the attempt's first statement) after the step's attempts before this schedule.
  let attempt = attemptNumber();
  // After a wait in the workflow, the job stays `queued` until this attempt has its slot.
  const resumed = { pending: args.slotWait?.resumed ?? false };
  const definition = deps.jobs.require(args.jobType);
  const budget = budgetOf(definition, args);
  let waitedMs = 0;
  let start: AttemptStart | undefined;
  const state: StepState = { spanRecorded: false, effect: undefined };
  // A success handed off by `storeWithResult` and not yet taken by the result statement: committed
  // on its own before anything else of the attempt (another effect, its outcome, its failure).
  const storeHandedOff = async () => {
    const e = state.effect;
    if (!e) return;
    state.effect = undefined;
    if (!(await storeSuccess(deps, e)))
      warnStale(deps.log, { jobId: args.jobId, effectKey: e.effectKey, step: e.attempt?.step ?? step, attempt });
  };
  const slotFor = (name: string) =>
    effectSlot(deps, {
      jobId: args.jobId,
      jobType: args.jobType,
      tenantId: args.tenantId,
      attempt,
      holder: `${args.jobId}:${name}#${attempt}`,
      limits: deps.limits[args.jobType] ?? definition.concurrency,
      total: deps.totalConcurrency,
      attemptStartedAt: startedAt,
      onWaited: (ms) => {
        waitedMs += ms;
      },
      waitInWorkflow: args.slotWait !== undefined,
      resumed,
    });
  // The heartbeat's details: the step, and the latest progress report once there is one.
  const heartbeatDetails: { step: string; progress?: ProgressReport } = { step };
  const progress = createProgressReporter(step, {
    write: (p) => recordProgress(deps.pool, args.jobId, p),
    onReport: (p) => {
      heartbeatDetails.progress = p;
    },
    onError: (e) => deps.log.warn({ jobId: args.jobId, step, err: e.message }, 'could not store progress'),
  });
  const ctx: StepContext = {
    args,
    progress: (report) => progress.report(report),
    get attempt() {
      return attempt;
    },
    startedAt,
    effect: (async (
      name: string,
      target: string | EffectCall,
      third?: Record<string, unknown> | UpstreamEffectOptions,
      fourth?: EffectOptions,
    ): Promise<EffectResult> => {
      await storeHandedOff();
      const slot = slotFor(name);
      const effectOpts: EffectOptions = (typeof target === 'string' ? fourth : third) ?? {};
      const request: EffectRequest =
        typeof target === 'string'
          ? { path: target, body: third as Record<string, unknown>, upstream: definition.upstream }
          : { call: target, through: upstreamOf(name, third as UpstreamEffectOptions | undefined) };
      return runEffect(deps, {
        ...request,
        effectScope: args.effectScope ?? args.jobId,
        jobId: args.jobId,
        tenantId: args.tenantId,
        step: name,
        timeoutMs: budget.upstreamTimeoutMs,
        startedAt,
        // One setting read per attempt: the one its first statement made.
        fallback: start
          ? planFrom(start.setting, args.jobType, definition.fallback)
          : await fallbackPlan(deps.pool, args.jobType, definition.fallback),
        guard: slot.guard,
        claimSlot: slot,
        handOff: effectOpts.storeWithResult
          ? (e) => {
              state.effect = e;
            }
          : undefined,
      });
    }) as StepContext['effect'],
    input: async <I>() => {
      const input = start?.input !== undefined && start.input !== null ? start.input : await loadInput(deps.pool, args.jobId);
      // The intake commits the intent before it starts the workflow, so this is reachable only
      // in the race where a failed concurrent start removed the row and services/start-marks.ts writes it again.
      if (input === undefined) throw new RetryableError('job intent not visible yet', { errorClass: 'intent_not_committed' });
      return input as I;
    },
    // Folded into the step's last statement: the span so far (the rest is microseconds), and the lease's end.
    closing: () => ({ spanMs: Date.now() - startedAt.getTime() - waitedMs, lease: lease?.key }),
    finished: () => {
      state.spanRecorded = true;
      if (lease) lease.ended = true;
    },
    takeEffect: () => {
      const e = state.effect;
      state.effect = undefined;
      return e;
    },
  };
  let ran = false;
  // Execution time is this span, slot waits excluded; back-offs fall between spans.
  const recordSpan = () =>
    ran && !state.spanRecorded
      ? addExecutionSpan(deps.pool, args.jobId, Date.now() - startedAt.getTime() - waitedMs, startedAt).catch((e: Error) =>
          deps.log.warn({ jobId: args.jobId, err: e.message }, 'could not record execution time'),
        )
      : undefined;
  try {
    const result = await withHeartbeat(async () => {
      await whenDatabaseIsBack(deps, args.jobId, async () => {
        // The lease row in the same statement as the attempt's first writes: the fence
        // (store/fence.ts) counts on it being there no later than they are.
        const leaseRow =
          lease && !lease.started
            ? {
                ...lease.key,
                attempt: local ? null : lease.key.attempt,
                activityType: lease.activityType,
                startToCloseMs: lease.startToCloseMs,
                step,
              }
            : undefined;
        const admitCheck = args.admitInStep === true;
        const holdCheck = !admitCheck && args.holdIfPaused === true;
        const fence = local ? undefined : currentFence();
        // A schedule's first attempt fences no earlier one: its start is evidence only, committed
        // without waiting for the flush (`startAttempt`); the effect's claim, synchronous, flushes it.
        // A local attempt's number comes from its lease row, so its start stays synchronous.
        const startOpts = { withInput: opts.prefetchInput ?? false, lease: leaseRow, stillWaiting: resumed.pending, admitCheck, holdCheck };
        start = local
          ? await startAttempt(deps.pool, args.jobId, null, undefined, startOpts)
          : await startAttempt(deps.pool, args.jobId, attempt, fence, { ...startOpts, asyncCommit: fence?.attempt === 1 });
        if (lease) lease.started = start.admitted;
      });
      if (start && !start.admitted) {
        // Not admitted: the statement wrote nothing, no lease row either. A leased activity's
        // tracking (activities/lease-tracking.ts) must not write one afterwards as evidence of
        // an attempt that never began: its scope says the lease is done with.
        if (lease && !local) lease.started = lease.ended = true;
        throw new NotAdmittedError(
          args.holdIfPaused === true && args.admitInStep !== true
            ? 'a pause holds the job at this step; the workflow runs the gate'
            : 'the degradation gate did not admit the job at once; the workflow runs the gate',
        );
      }
      if (local && lease) {
        await numberLocalAttempt(deps, lease, start?.attempt ?? null, step);
        attempt = attemptNumber();
      }
      ran = true;
      try {
        return await body(ctx);
      } finally {
        await progress.flush();
      }
    }, heartbeatDetails);
    await storeHandedOff();
    await recordSpan();
    if (local) await endLocalLease(deps, lease, 'completed');
    return result;
  } catch (err) {
    await storeHandedOff().catch((e: Error) =>
      deps.log.warn({ jobId: args.jobId, err: e.message }, 'could not store the effect before the failure; the next attempt reconciles it'),
    );
    await recordSpan();
    if (local) await endLocalLease(deps, lease, err instanceof CancelledFailure ? 'cancelled' : 'failed');
    // A workflow that reads waits as return values gets one (no failed activity in its history).
    const waitsReturn = args.slotWait?.waitsReturn === true;
    if (err instanceof SlotUnavailableError) {
      if (waitsReturn) return { durableJobsWait: 'slot', message: err.message, attempt } satisfies StepWait as T;
      throw slotWait(err, attempt);
    }
    if (err instanceof NotAdmittedError) {
      // A held later step says which job attempt did not run (the workflow keeps the numbering).
      if (waitsReturn)
        return {
          durableJobsWait: 'admission',
          message: err.message,
          ...(args.holdIfPaused && !args.admitInStep ? { attempt } : {}),
        } satisfies StepWait as T;
      throw notAdmitted(err);
    }
    return failAttempt(deps, { jobId: args.jobId, step, budget, startedAt }, err);
  }
}

/**
 * The first step's statement found the job not admitted at once (`StepArgs.admitInStep`): the
 * workflow runs the degradation gate (workflows/step-activities.ts) and schedules the step
 * again. Returned as a `StepWait` to a workflow that reads them (`SlotWaitArgs.waitsReturn`);
 * for one from before, this failure: not retryable, so Temporal spends no attempt on it.
 * Nothing of the attempt was written.
 */
function notAdmitted(err: NotAdmittedError): ApplicationFailure {
  return ApplicationFailure.create({ message: err.message, type: ADMISSION_WAIT_FAILURE, nonRetryable: true });
}

/**
 * No concurrency slot was free: the workflow waits (workflows/step-activities.ts) and schedules
 * the step again as the same job attempt. Returned as a `StepWait` to a workflow that reads them
 * (`SlotWaitArgs.waitsReturn`); for one from before, this failure: not retryable, so Temporal
 * spends no attempt of the step's cap on it. No attempt row either (the wait is no outcome of
 * the upstream's).
 */
function slotWait(err: SlotUnavailableError, attempt: number): ApplicationFailure {
  return ApplicationFailure.create({
    message: err.message,
    type: SLOT_WAIT_FAILURE,
    nonRetryable: true,
    details: [{ errorClass: 'slot_unavailable', attempt } satisfies SlotWaitDetails],
  });
}

/**
 * A local activity's attempt takes the number its lease row got: that number fences every
 * later write of the attempt (store/fence.ts), so an attempt whose workflow task was lost and
 * that lives on (a paused worker) is refused once the attempt that took over has started. If
 * the attempt before it left its lease open, it was lost (its worker died, or its workflow task
 * timed out): flagged and counted, as a leased activity's next attempt does.
 */
async function numberLocalAttempt(deps: StepDeps, lease: LeaseScope, n: number | null, step: string): Promise<void> {
  if (n === null) {
    throw new RetryableError('another attempt of this step started at the same moment', { errorClass: 'attempt_race' });
  }
  lease.key.attempt = n;
  setLocalAttempt(n);
  if (n === 1) return;
  const previous = { ...lease.key, attempt: n - 1 };
  try {
    const lost = await flagLeaseExpired(deps.pool, previous, undefined);
    if (lost.flagged) {
      deps.log.warn({ jobId: lease.key.jobId, step, attempt: n - 1 }, 'previous attempt lost its workflow task (no outcome recorded)');
      await recordLostAttempt(deps.pool, previous, lost.step ?? step, attemptOffset());
    }
  } catch (err) {
    deps.log.warn({ jobId: lease.key.jobId, err: (err as Error).message }, 'could not record lease evidence');
  }
}

/** The end of a local activity's lease row (a leased activity's is written by activities/lease-tracking.ts). */
async function endLocalLease(deps: StepDeps, lease: LeaseScope | undefined, outcome: 'completed' | 'failed' | 'cancelled'): Promise<void> {
  if (!lease?.started || lease.ended || lease.key.attempt === 0) return;
  lease.ended = true;
  await leaseEnded(deps.pool, lease.key, outcome).catch((e: Error) =>
    deps.log.warn({ jobId: lease.key.jobId, err: e.message }, 'could not record lease evidence'),
  );
}

interface StepState {
  spanRecorded: boolean;
  effect: EffectSuccess | undefined;
}

/**
 * Result and outbox rows in one statement, fenced by the attempt number: a stale attempt
 * that finishes after a newer one wrote its result changes nothing. The same commit carries
 * the attempt's execution span and its lease's end. A refused write commits those too (they
 * are evidence either way) and records a `fenced` attempt.
 */
export async function completeWithOutbox(
  deps: StepDeps,
  ctx: StepContext,
  result: unknown,
  notification?: { kind: string; payload: Record<string, unknown> },
): Promise<boolean> {
  const closing = ctx.closing?.();
  const effect = ctx.takeEffect?.();
  const { landed, effectStored, woken } = await writeResultFenced(
    deps.pool,
    ctx.args.jobId,
    ctx.attempt,
    result,
    notification ? 'pending' : null,
    {
      outbox: notification && {
        jobId: ctx.args.jobId,
        kind: notification.kind,
        payload: notification.payload,
        effectKey: effectKeyFor(ctx.args.effectScope ?? ctx.args.jobId, `notify-${notification.kind}`),
        deliverWithinMs: 15 * 60_000,
      },
      span: closing && { ms: closing.spanMs, attemptStartedAt: ctx.startedAt },
      lease: closing?.lease,
      refused: {
        jobId: ctx.args.jobId,
        step: 'result',
        attempt: ctx.attempt,
        outcome: 'fenced',
        errorClass: 'stale_attempt',
        startedAt: ctx.startedAt,
      },
      effect,
    },
  );
  ctx.finished?.();
  wakeSlotWaiter(deps.log, woken);
  if (effect && !effectStored) {
    warnStale(deps.log, {
      jobId: ctx.args.jobId,
      effectKey: effect.effectKey,
      step: effect.attempt?.step ?? 'result',
      attempt: ctx.attempt,
    });
  }
  if (!landed) {
    deps.log.warn(
      { jobId: ctx.args.jobId, attempt: ctx.attempt },
      'fenced result write refused: a newer attempt already stored its result',
    );
  }
  return landed;
}
