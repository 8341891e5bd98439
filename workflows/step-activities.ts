import {
  type ActivityFailure,
  type ApplicationFailure,
  condition,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import { slotFreedSignal } from '../contract/messages.js';
import { ADMISSION_WAIT_FAILURE, type JobBudget, type SlotWaitArgs, type StepArgs, stepWaitOf } from '../contract/job-types.js';
import { localStepOptions, stepOptions } from './activity-options.js';
import { asActivityFailure, elapsedCapReached, failureTypeOf, slotWaitOf } from './step-failures.js';
import { admittedInStep, gateAfterRefusal, gateAskedInStep, gateHoldsAtStep } from './admission.js';

/**
 * Between schedules of a step that found no free slot: jittered, from 3 s growing to 20 s. The
 * release that frees a slot wakes the oldest waiter of its scope (`slotFreedSignal`), and a
 * waiter registers before its last try (activities/concurrency.ts), so a free slot does not wait
 * for a timer: the timer only covers a slot whose holder died (its lease lapses after
 * `SLOT_TTL_MS`, 15 s) or a wake that was lost. It was 250 ms growing to 2 s: a flood of 1,000
 * waiting jobs then woke about 700 times a second, each wake a timer, a workflow task and an
 * activity, and another tenant's jobs queued behind them (issue 38 §5).
 */
const FIRST_PAUSE_MS = 3_000;
const PAUSE_CAP_MS = 20_000;
/** The shortest wait worth a timer, when the elapsed cap leaves little. */
const MIN_PAUSE_MS = 100;
/** A schedule needs at least this much of the elapsed cap left to be worth making. */
const MIN_SCHEDULE_MS = 1_000;

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
 * worker. An attempt that finds no free slot ends at once and returns the wait (`StepWait`; a
 * `SlotWait` failure in histories from before): no retry attempt spent, no call made, no failed
 * activity, the job `queued` with the reason. The workflow then waits on a
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
  let slotWait: SlotWaitArgs = { attemptOffset: 0, resumed: false, waitsReturn: true };
  // Wakes by a freed slot (`slotFreedSignal`), counted from the first wait on; one that came
  // while an attempt ran ends the next wait at once (that attempt may have missed the slot).
  let wakes = 0;
  let listening = false;
  for (let round = 0; ; round++) {
    // The job's first step may ask the degradation gate's question (runJob's `admitInFirstStep`).
    const asks = gateAskedInStep();
    // Any later step asks only whether a pause holds the job (issue 38 §4, `StepArgs.holdIfPaused`).
    const holds = !asks && gateHoldsAtStep();
    const question = asks ? { admitInStep: true } : holds ? { holdIfPaused: true } : {};
    const wakesBefore = wakes;
    // Why the step must wait: returned (`StepWait`), or, in histories from before
    // `SlotWaitArgs.waitsReturn`, thrown as a `SlotWait` or `AdmissionWait` failure.
    let waited: { kind: 'admission'; attempt?: number } | { kind: 'slot'; attempt: number; capReached: () => ActivityFailure };
    try {
      const out = await steps[name]!({ ...args, slotWait, ...question }, ...rest);
      const wait = stepWaitOf(out);
      if (wait?.durableJobsWait === 'admission' && (asks || holds)) waited = { kind: 'admission', attempt: wait.attempt };
      else if (wait?.durableJobsWait === 'slot' && typeof wait.attempt === 'number') {
        const attempt = wait.attempt;
        waited = { kind: 'slot', attempt, capReached: () => elapsedCapReached(name, wait.message, { attempt }, budget) };
      } else {
        if (asks) admittedInStep();
        return out;
      }
    } catch (thrown) {
      const err = local ? asActivityFailure(thrown, name) : thrown;
      if ((asks || holds) && failureTypeOf(err) === ADMISSION_WAIT_FAILURE) waited = { kind: 'admission' };
      else {
        const details = slotWaitOf(err);
        if (!details) {
          if (asks) admittedInStep();
          throw err;
        }
        const failure = err as ActivityFailure;
        waited = {
          kind: 'slot',
          attempt: details.attempt,
          capReached: () => elapsedCapReached(name, (failure.cause as ApplicationFailure).message, details, budget, failure),
        };
      }
    }
    if (waited.kind === 'admission') {
      // Not admitted, nothing written: the gate holds the job (deferred, a ramp slot) as it
      // would have before the body; then the step runs afresh, its budget from now on.
      await gateAfterRefusal();
      began = Date.now();
      round = -1;
      // A later step held at a retry (its job attempt `attempt`, which did not run) keeps its
      // attempt numbers and cap, as after a slot wait: numbers already used stay fenced off.
      if (holds && !local && waited.attempt !== undefined && waited.attempt - 1 > slotWait.attemptOffset) {
        slotWait = { attemptOffset: waited.attempt - 1, resumed: false, waitsReturn: true };
        steps = proxy({
          ...budget,
          maximumAttempts: budget.maximumAttempts > 0 ? Math.max(1, budget.maximumAttempts - slotWait.attemptOffset) : 0,
        });
      }
      continue;
    }
    if (asks) admittedInStep();
    // Never past the elapsed cap: the last wait is shortened so one schedule still fits.
    const remaining = budget.scheduleToCloseTimeoutMs - (Date.now() - began);
    const pause = Math.min(PAUSE_CAP_MS, FIRST_PAUSE_MS * 1.5 ** round, remaining - MIN_SCHEDULE_MS);
    if (pause < MIN_PAUSE_MS) throw waited.capReached();
    if (round === 0) log.info('waiting for a concurrency slot in the workflow', { step: name, attempt: waited.attempt });
    // Jittered: waiters of one scope do not come back in lockstep.
    const wait = pause / 2 + (Math.random() * pause) / 2;
    // Woken early by `slotFreedSignal` when a slot of its scope frees.
    if (!listening) {
      setHandler(slotFreedSignal, () => void wakes++);
      listening = true;
    }
    await condition(() => wakes > wakesBefore, wait);
    slotWait = { attemptOffset: waited.attempt - 1, resumed: true, waitsReturn: true };
    steps = proxy({
      ...budget,
      maximumAttempts: budget.maximumAttempts > 0 ? Math.max(1, budget.maximumAttempts - slotWait.attemptOffset) : 0,
      scheduleToCloseTimeoutMs: budget.scheduleToCloseTimeoutMs - (Date.now() - began),
    });
  }
}
