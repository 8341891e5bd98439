import {
  budgetOf,
  deliverNotifications,
  resultStored,
  runJob,
  stepActivities,
  type JobOutcome,
  type StepArgs,
} from '../../job-api/workflow.js';
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
  const steps = stepActivities<SummarizeActivities>(budget, { local });
  return runJob(
    args,
    summarize,
    async (setPhase) => {
      const outcome = await steps.summarizeText(args);
      if (outcome.notify) {
        if (outcome.resultStored) resultStored(setPhase, local);
        // Its own budget; a notification that fails for good leaves the job succeeded.
        await deliverNotifications(args, budget, { local });
      }
      return outcome;
    },
    // The fast-path type keeps the gate as a local activity in its one workflow task.
    { admitInFirstStep: !local },
  );
}
