import { Context } from '@temporalio/activity';
import { NonRetryableError } from '../lib/errors.js';
import type { StepArgs } from '../contract/job-types.js';
import { budgetOf } from '../job-api/define.js';
import { createProgressReporter, type ProgressReport } from '../job-api/progress.js';
import { recordProgress } from '../store/progress.js';
import type { ActivityDeps } from './deps.js';
import { attemptDeps } from './attempt.js';
import type { EffectCall, Upstream } from '../job-api/upstream.js';
import { currentLease, type LeaseScope } from './lease-tracking.js';
import { StepAttempt } from './step-attempt.js';
import type { EffectRequest, EffectResult } from './upstream-call.js';

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
 * Wraps one step activity as one attempt (activities/step-attempt.ts): marks the job running,
 * keeps the lease (heartbeats), runs the body, and turns every failure into a classified,
 * recorded Temporal failure.
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
  const definition = deps.jobs.require(args.jobType);
  const local = Context.current().info.isLocal;
  const attempt = new StepAttempt(attemptDeps(deps), {
    args,
    step,
    budget: budgetOf(definition, args),
    prefetchInput: opts.prefetchInput,
    slots: { limits: deps.limits[args.jobType] ?? definition.concurrency, total: deps.totalConcurrency },
    upstream: definition.upstream,
    declaresFallback: definition.fallback,
    lease: local ? localLease() : currentLease(),
    local,
  });
  // The heartbeat's details: the step, and the latest progress report once there is one.
  const heartbeat: { step: string; progress?: ProgressReport } = { step };
  const progress = createProgressReporter(step, {
    write: (p) => recordProgress(deps.pool, args.jobId, p),
    onReport: (p) => {
      heartbeat.progress = p;
    },
    onError: (e) => deps.log.warn({ jobId: args.jobId, step, err: e.message }, 'could not store progress'),
  });
  const ctx = stepContext(attempt, args, (r) => progress.report(r), definition.upstream);
  return attempt.run(async () => {
    try {
      return await body(ctx);
    } finally {
      await progress.flush();
    }
  }, heartbeat);
}

/** The attempt each context belongs to, for `completeWithOutbox`. */
const attempts = new WeakMap<StepContext, StepAttempt>();

/** What the step's body sees of its attempt. */
function stepContext(
  attempt: StepAttempt,
  args: StepArgs,
  progress: (r: ProgressReport) => void,
  declared: { idempotentByKey: boolean; lookupByKey: boolean } | undefined,
): StepContext {
  const timeoutMs = attempt.of.budget!.upstreamTimeoutMs;
  const ctx: StepContext = {
    args,
    progress,
    get attempt() {
      return attempt.attempt;
    },
    startedAt: attempt.startedAt,
    effect: ((
      step: string,
      target: string | EffectCall,
      third?: Record<string, unknown> | UpstreamEffectOptions,
      fourth?: EffectOptions,
    ) => {
      const storeWithResult = ((typeof target === 'string' ? fourth : third) as EffectOptions | undefined)?.storeWithResult;
      const request: EffectRequest =
        typeof target === 'string'
          ? { path: target, body: third as Record<string, unknown>, upstream: declared }
          : { call: target, through: upstreamOf(step, third as UpstreamEffectOptions | undefined) };
      return attempt.effect({ ...request, step, timeoutMs, storeWithResult });
    }) as StepContext['effect'],
    input: () => attempt.input(),
  };
  attempts.set(ctx, attempt);
  return ctx;
}

/**
 * The fast path (a local activity, README "The fast path"): no heartbeat, no lease tracking
 * around it (activities/lease-tracking.ts tracks leased activities); its lease is the workflow
 * task. The step keeps a lease row of its own, numbered by Postgres, which is its fence.
 */
function localLease(): LeaseScope | undefined {
  const info = Context.current().info;
  if (!info.workflowExecution) return undefined;
  return {
    key: { jobId: info.workflowExecution.workflowId, runId: info.workflowExecution.runId, activityId: info.activityId, attempt: 0 },
    activityType: info.activityType,
    startToCloseMs: info.startToCloseTimeoutMs,
    started: false,
    ended: false,
  };
}

/**
 * Result and outbox rows in one statement, fenced by the attempt number: a stale attempt
 * that finishes after a newer one wrote its result changes nothing. The same commit carries
 * the attempt's execution span and its lease's end. A refused write commits those too (they
 * are evidence either way) and records a `fenced` attempt.
 */
export async function completeWithOutbox(
  _deps: StepDeps,
  ctx: StepContext,
  result: unknown,
  notification?: { kind: string; payload: Record<string, unknown> },
): Promise<boolean> {
  const attempt = attempts.get(ctx);
  if (!attempt) throw new NonRetryableError('completeWithOutbox needs the context runStep gave the step', { errorClass: 'configuration' });
  return attempt.complete(result, notification);
}
