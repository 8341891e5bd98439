import {
  bookkeepingActivities,
  budgetOf,
  resultStored,
  runJob,
  stepActivities,
  type JobOutcome,
  type StepArgs,
  type SystemActivities,
} from '../../job-api/workflow.js';
import { ActivityFailure } from '@temporalio/workflow';
import { summarize } from './definition.js';
import type { SummarizeActivities } from './activities.js';

/** `summarize`: one provider call, result + outbox in one transaction, then the notification. */
export async function summarizeJob(args: StepArgs): Promise<JobOutcome> {
  return summarizeBody(args, false);
}

/**
 * The same job on the fast path (`FAST_PATH_JOB_TYPES=summarize`, README "The fast path"):
 * each step a local activity, so the whole job runs in one workflow task.
 */
export async function summarizeJobLocal(args: StepArgs): Promise<JobOutcome> {
  return summarizeBody(args, true);
}

async function summarizeBody(args: StepArgs, local: boolean): Promise<JobOutcome> {
  const budget = budgetOf(summarize, args);
  /** Notifications have their own budget: they may retry long after the job succeeded. */
  const notifyBudget = { ...budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 };
  const summary = 'deliver the notification from the outbox';
  const steps = stepActivities<SummarizeActivities>(budget, { local });
  // Through stepActivities on both paths: on the fast path it wraps a local activity's failure
  // as the ActivityFailure the catch below expects.
  const notify = stepActivities<SystemActivities>(notifyBudget, { local, summary });
  return runJob(
    args,
    summarize,
    async (setPhase) => {
      const outcome = await steps.summarizeText(args);
      if (outcome.notify) {
        if (outcome.resultStored) resultStored(setPhase, local);
        try {
          await notify.deliverOutbox(args);
        } catch (err) {
          // The job stays succeeded; the failed notification is visible on its own.
          if (!(err instanceof ActivityFailure)) throw err;
          await bookkeepingActivities.markNotificationFailed(args);
        }
      }
      return outcome;
    },
    // The fast-path type keeps the gate as a local activity in its one workflow task.
    { admitInFirstStep: !local },
  );
}
