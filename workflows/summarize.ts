import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { StepArgs } from '../activities/job-steps.js';
import { budgetFor } from './job-types.js';
import { resultStored, runJob, stepOptions, type JobOutcome } from './lifecycle.js';

const bookkeeping = proxyActivities<Activities>({ startToCloseTimeout: '30s' });

/** `summarize`: one provider call, result + outbox in one transaction, then the notification. */
export async function summarizeJob(args: StepArgs): Promise<JobOutcome> {
  const budget = budgetFor(args);
  const steps = proxyActivities<Activities>(stepOptions(budget));
  /** Notifications have their own budget: they may retry long after the job succeeded. */
  const notify = proxyActivities<Activities>({
    ...stepOptions({ ...budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 }),
    summary: 'deliver the notification from the outbox',
  });
  return runJob(args, async () => {
    const outcome = await steps.summarizeText(args);
    if (outcome.notify) {
      if (outcome.resultStored) resultStored();
      try {
        await notify.deliverOutbox(args);
      } catch (err) {
        // The job stays succeeded; the failed notification is visible on its own.
        if (!(err instanceof ActivityFailure)) throw err;
        await bookkeeping.markNotificationFailed(args);
      }
    }
    return outcome;
  });
}
