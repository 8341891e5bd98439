import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import { slotFreedSignal } from '../contract/messages.js';
import {
  ADMISSION_WAIT_FAILURE,
  SLOT_WAIT_FAILURE,
  type JobBudget,
  type SlotWaitArgs,
  type SlotWaitDetails,
  type StepArgs,
} from '../contract/job-types.js';
import { localStepOptions, stepOptions } from './activity-options.js';
import { admittedInStep, gateAfterRefusal, gateAskedInStep } from './admission.js';

/** Between schedules of a step that found no free slot: jittered, from 250 ms growing to 2 s. */
const FIRST_PAUSE_MS = 250;
const PAUSE_CAP_MS = 2_000;
/** A schedule needs at least this much of the elapsed cap left to be worth making. */
const MIN_SCHEDULE_MS = 1_000;
/** Histories from before the wait could be woken by `slotFreedSignal` slept on a bare timer. */
const SLOT_WAKE_PATCH = 'slot-wait-woken-by-release';

type StepFn = (args: StepArgs, ...rest: unknown[]) => Promise<unknown>;

export interface StepActivitiesOptions {
  /** The fast path: each step a local activity (`localStepOptions`). Default false. */
  local?: boolean;
  /** The Web UI's summary of each scheduled step. Default none. */
  summary?: string;
}

/**
 * A job type's step activities, proxied with its budget (`stepOptions`, or `localStepOptions`
 * on the fast path), where a step waits for a concurrency slot in the workflow, not in a
 * worker. An attempt that finds no free slot ends at once with a `SlotWait` failure: no retry
 * attempt spent, no call made, the job `queued` with the reason. The workflow then waits on a
 * durable timer, ended early when a freed slot wakes it (`slotFreedSignal`: the statement that
 * frees a slot of its type names the longest waiter), and schedules the step again as the same
 * job attempt, with the attempt cap lowered by the attempts before it and the elapsed cap by the
 * time gone, so waiting holds no worker activity slot, counts as queue time, and never stretches
 * the retry budget. A step whose elapsed cap runs out while it waits is dead-lettered
 * (`slot_unavailable`).
 *
 * Each step's first argument must be its `StepArgs` (it carries `slotWait` to the activity).
 * A workflow that calls `proxyActivities` itself still works: its attempts wait for their slot
 * inside the activity, as before.
 */
export function stepActivities<A extends object>(budget: JobBudget, opts: StepActivitiesOptions = {}): A {
  const proxy = (b: JobBudget): Record<string, StepFn> => {
    const options = { ...(opts.local ? localStepOptions(b) : stepOptions(b)), ...(opts.summary ? { summary: opts.summary } : {}) };
    return opts.local ? proxyLocalActivities<Record<string, StepFn>>(options) : proxyActivities<Record<string, StepFn>>(options);
  };
  const first = proxy(budget);
  return new Proxy({} as A, {
    get(_target, name) {
      if (typeof name !== 'string') return undefined;
      return (args: StepArgs, ...rest: unknown[]) => runWaitingForSlots(name, args, rest, budget, first, proxy, opts.local ?? false);
    },
  });
}

async function runWaitingForSlots(
  name: string,
  args: StepArgs,
  rest: unknown[],
  budget: JobBudget,
  first: Record<string, StepFn>,
  proxy: (b: JobBudget) => Record<string, StepFn>,
  local: boolean,
): Promise<unknown> {
  // Workflow time: the same on every replay.
  let began = Date.now();
  let steps = first;
  let slotWait: SlotWaitArgs = { attemptOffset: 0, resumed: false };
  // Wakes by a freed slot (`slotFreedSignal`), counted from the first wait on; one that came
  // while an attempt ran ends the next wait at once (that attempt may have missed the slot).
  let wakes = 0;
  let listening = false;
  for (let round = 0; ; round++) {
    // The job's first step may ask the degradation gate's question (runJob's `admitInFirstStep`).
    const asks = gateAskedInStep();
    const wakesBefore = wakes;
    try {
      const out = await steps[name]!({ ...args, slotWait, ...(asks ? { admitInStep: true } : {}) }, ...rest);
      if (asks) admittedInStep();
      return out;
    } catch (thrown) {
      const err = local ? asActivityFailure(thrown, name) : thrown;
      if (asks && failureTypeOf(err) === ADMISSION_WAIT_FAILURE) {
        // Not admitted, nothing written: the gate holds the job (deferred, a ramp slot) as it
        // would have before the body; then the step runs afresh, its budget from now on.
        await gateAfterRefusal();
        began = Date.now();
        round = -1;
        continue;
      }
      if (asks) admittedInStep();
      const waited = slotWaitOf(err);
      if (!waited) throw err;
      const pause = Math.min(PAUSE_CAP_MS, FIRST_PAUSE_MS * 1.5 ** round);
      const left = budget.scheduleToCloseTimeoutMs - (Date.now() - began) - pause;
      if (left < MIN_SCHEDULE_MS) throw elapsedCapReached(err as ActivityFailure, budget);
      if (round === 0) log.info('waiting for a concurrency slot in the workflow', { step: name, attempt: waited.attempt });
      // Jittered: waiters of one scope do not come back in lockstep.
      const wait = pause / 2 + (Math.random() * pause) / 2;
      // On the waiting path only, so the patch's marker is in no history of a job that never waited.
      if (patched(SLOT_WAKE_PATCH)) {
        if (!listening) {
          setHandler(slotFreedSignal, () => void wakes++);
          listening = true;
        }
        await condition(() => wakes > wakesBefore, wait);
      } else await sleep(wait);
      slotWait = { attemptOffset: waited.attempt - 1, resumed: true };
      steps = proxy({
        ...budget,
        maximumAttempts: budget.maximumAttempts > 0 ? Math.max(1, budget.maximumAttempts - slotWait.attemptOffset) : 0,
        scheduleToCloseTimeoutMs: budget.scheduleToCloseTimeoutMs - (Date.now() - began),
      });
    }
  }
}

/**
 * A local activity's failure as the `ActivityFailure` a leased activity's would be. The SDK
 * (core's local-activity machine) hands a local activity's own failure to the workflow as it
 * was thrown, wrapping only timeouts and cancellations; the lifecycle (`runJob`) dead-letters
 * an `ActivityFailure`, so unwrapped, a fast-path job that cannot succeed would fail its
 * workflow with no dead letter, its row left `running`. The retry state is inferred: a
 * non-retryable failure ended it, otherwise the attempt cap did.
 */
function asActivityFailure(err: unknown, activityType: string): unknown {
  if (!(err instanceof ApplicationFailure)) return err;
  return new ActivityFailure(
    'Local activity failed',
    activityType,
    undefined,
    err.nonRetryable ? 'NON_RETRYABLE_FAILURE' : 'MAXIMUM_ATTEMPTS_REACHED',
    undefined,
    err,
  );
}

/** The type of an activity's own failure (`ApplicationFailure`), or undefined for any other error. */
function failureTypeOf(err: unknown): string | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  return err.cause.type ?? undefined;
}

/** The details of a `SlotWait` failure, or undefined for any other error. */
function slotWaitOf(err: unknown): SlotWaitDetails | undefined {
  if (failureTypeOf(err) !== SLOT_WAIT_FAILURE) return undefined;
  const d = ((err as ActivityFailure).cause as ApplicationFailure).details?.[0] as Partial<SlotWaitDetails> | undefined;
  return typeof d?.attempt === 'number' ? { errorClass: 'slot_unavailable', attempt: d.attempt } : undefined;
}

/** The step's last `SlotWait`, said as the elapsed cap it ran out of: the lifecycle dead-letters it with that evidence. */
function elapsedCapReached(err: ActivityFailure, budget: JobBudget): ActivityFailure {
  const cause = err.cause as ApplicationFailure;
  return new ActivityFailure(
    err.message,
    err.activityType,
    err.activityId,
    'TIMEOUT',
    err.identity,
    ApplicationFailure.create({
      message: `${cause.message}; the elapsed cap of ${budget.scheduleToCloseTimeoutMs} ms ran out while waiting`,
      type: SLOT_WAIT_FAILURE,
      nonRetryable: true,
      details: cause.details ?? [],
    }),
  );
}
