import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { SLOT_WAIT_FAILURE, type JobBudget, type SlotWaitDetails } from '../contract/job-types.js';

// How a step's wait reads in the workflow (workflows/step-activities.ts): a local activity's
// failure as a leased activity's, the type and details of a wait thrown by an older activity,
// and the dead letter's evidence when the elapsed cap runs out while waiting.

/**
 * A local activity's failure as the `ActivityFailure` a leased activity's would be. The SDK
 * (core's local-activity machine) hands a local activity's own failure to the workflow as it
 * was thrown, wrapping only timeouts and cancellations; the lifecycle (`runJob`) dead-letters
 * an `ActivityFailure`, so unwrapped, a fast-path job that cannot succeed would fail its
 * workflow with no dead letter, its row left `running`. The retry state is inferred: a
 * non-retryable failure ended it, otherwise the attempt cap did.
 */
export function asActivityFailure(err: unknown, activityType: string): unknown {
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
export function failureTypeOf(err: unknown): string | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  return err.cause.type ?? undefined;
}

/** The details of a `SlotWait` failure, or undefined for any other error. */
export function slotWaitOf(err: unknown): SlotWaitDetails | undefined {
  if (failureTypeOf(err) !== SLOT_WAIT_FAILURE) return undefined;
  const d = ((err as ActivityFailure).cause as ApplicationFailure).details?.[0] as Partial<SlotWaitDetails> | undefined;
  return typeof d?.attempt === 'number' ? { errorClass: 'slot_unavailable', attempt: d.attempt } : undefined;
}

/**
 * The step's last wait for a slot, said as the elapsed cap it ran out of: the lifecycle
 * dead-letters it with that evidence (a `SlotWait` failure, class `slot_unavailable`), whether
 * the wait was returned or, in an older history, thrown (`failure`).
 */
export function elapsedCapReached(
  activityType: string,
  message: string,
  details: { attempt: number },
  budget: JobBudget,
  failure?: ActivityFailure,
): ActivityFailure {
  return new ActivityFailure(
    failure?.message ?? 'Activity task failed',
    activityType,
    failure?.activityId,
    'TIMEOUT',
    failure?.identity,
    ApplicationFailure.create({
      message: `${message}; the elapsed cap of ${budget.scheduleToCloseTimeoutMs} ms ran out while waiting`,
      type: SLOT_WAIT_FAILURE,
      nonRetryable: true,
      details: [{ errorClass: 'slot_unavailable', attempt: details.attempt } satisfies SlotWaitDetails],
    }),
  );
}
