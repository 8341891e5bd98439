import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { StepArgs } from '../../contract/job-types.js';
import { bookkeepingActivities, stepOptions } from '../../workflows/activity-options.js';
import { resultStored, runJob, type JobOutcome } from '../../workflows/lifecycle.js';
import { budgetOf } from '../../job-api/define.js';
import { summarize } from './definition.js';
import type { SystemActivities } from '../../activities/index.js';
import type { SummarizeActivities } from './activities.js';

/** `summarize`: one provider call, result + outbox in one transaction, then the notification. */
export async function summarizeJob(args: StepArgs): Promise<JobOutcome> {
  const budget = budgetOf(summarize, args);
  const steps = proxyActivities<SummarizeActivities>(stepOptions(budget));
  /** Notifications have their own budget: they may retry long after the job succeeded. */
  const notify = proxyActivities<SystemActivities>({
    ...stepOptions({ ...budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 }),
    summary: 'deliver the notification from the outbox',
  });
  return runJob(args, summarize, async (setPhase) => {
    const outcome = await steps.summarizeText(args);
    if (outcome.notify) {
      if (outcome.resultStored) resultStored(setPhase);
      try {
        await notify.deliverOutbox(args);
      } catch (err) {
        // The job stays succeeded; the failed notification is visible on its own.
        if (!(err instanceof ActivityFailure)) throw err;
        await bookkeepingActivities.markNotificationFailed(args);
      }
    }
    return outcome;
  });
}
