/**
 * Build B of drill item 14 (the rolling deploy): `summarize` with a changed workflow body, a short
 * timer before its step. The workflow types keep their names (summarizeJob, summarizeJobLocal), so
 * a history recorded on build A (an activity scheduled where B starts a timer) does not replay on
 * this code: only pinning keeps A's jobs off it.
 */
import { sleep } from '@temporalio/workflow';
import {
  budgetOf,
  deliverNotifications,
  resultStored,
  runJob,
  stepActivities,
  type JobOutcome,
  type StepArgs,
} from '../../../job-api/workflow.js';
import { summarize } from '../../../jobs/summarize/definition.js';
import type { SummarizeActivities } from '../../../jobs/summarize/activities.js';

/** B's change: every job's history holds a TimerStarted of this length before its step; A's never one. */
export const BUILD_B_TIMER_MS = 321;

export async function summarizeJob(args: StepArgs): Promise<JobOutcome> {
  return summarizeBody(args, false);
}

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
      await sleep(BUILD_B_TIMER_MS);
      const outcome = await steps.summarizeText(args);
      if (outcome.notify) {
        if (outcome.resultStored) resultStored(setPhase, local);
        await deliverNotifications(args, budget, { local });
      }
      return outcome;
    },
    { admitInFirstStep: !local },
  );
}
