import { ActivityFailure } from '@temporalio/workflow';
import type { JobBudget, StepArgs } from '../contract/job-types.js';
import type { SystemActivities } from '../activities/index.js';
import { bookkeepingActivities } from './activity-options.js';
import { stepActivities } from './step-activities.js';

/**
 * Delivers the notifications a job's result wrote to the outbox (`notify` in `defineJob`):
 * call it after the step that completed with them. They run on a budget of their own (they
 * may retry long after the job succeeded); one that fails for good is recorded as a failed
 * notification with its evidence, and the job stays succeeded. `local`: the fast path's
 * local activity. Its commands are the ones `summarize` always issued (its histories replay).
 */
export async function deliverNotifications(args: StepArgs, budget: JobBudget, opts: { local?: boolean } = {}): Promise<void> {
  const notifyBudget = { ...budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 };
  const summary = 'deliver the notification from the outbox';
  // Through stepActivities on both paths: on the fast path it wraps a local activity's failure
  // as the ActivityFailure the catch below expects.
  const notify = stepActivities<SystemActivities>(notifyBudget, { local: opts.local ?? false, summary });
  try {
    await notify.deliverOutbox(args);
  } catch (err) {
    // The job stays succeeded; the failed notification is visible on its own.
    if (!(err instanceof ActivityFailure)) throw err;
    await bookkeepingActivities.markNotificationFailed(args);
  }
}
