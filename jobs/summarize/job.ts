import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import { z } from 'zod';
import type { StepArgs } from '../../contract/job-types.js';
import { bookkeepingActivities, stepOptions } from '../../workflows/activity-options.js';
import { runJob, type JobOutcome } from '../../workflows/lifecycle.js';
import { budgetOf, defineJob } from '../../job-api/define.js';
import type { SystemActivities } from '../../activities/index.js';
import type { SummarizeActivities } from './activities.js';

export const summarize = defineJob({
  name: 'summarize',
  workflowType: 'summarizeJob',
  description: 'summarize a text with the provider, then notify by e-mail (optional)',
  input: z.object({
    text: z.string().min(1, 'text must not be empty').max(100_000, 'text must be at most 100000 characters'),
    notifyEmail: z.email('notifyEmail must be an e-mail address').optional(),
  }).strict(),
  // `notify-email` is the outbox delivery's effect (`notify-<kind>`), made only when asked for.
  effects: ['summarize', 'notify-email'],
  effectsFor: (input) => (input.notifyEmail ? ['summarize', 'notify-email'] : ['summarize']),
  staleResult: true,
  fallback: true,
});

/** `summarize`: one provider call, result + outbox in one transaction, then the notification. */
export async function summarizeJob(args: StepArgs): Promise<JobOutcome> {
  const budget = budgetOf(summarize, args);
  const steps = proxyActivities<SummarizeActivities>(stepOptions(budget));
  /** Notifications have their own budget: they may retry long after the job succeeded. */
  const notify = proxyActivities<SystemActivities>({
    ...stepOptions({ ...budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 }),
    summary: 'deliver the notification from the outbox',
  });
  return runJob(args, summarize, async () => {
    const outcome = await steps.summarizeText(args);
    if (outcome.notify) {
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
