import {
  completeWithOutbox,
  declaredNotifications,
  jobType,
  runStep,
  type ActivityDeps,
  type JobInput,
  type StepArgs,
} from '../../job-api/index.js';
import { summarize } from './definition.js';

export interface StepOutcome {
  resultStored: boolean;
  notify: boolean;
}

/** The `summarize` activities. Each function name is its Temporal activity type: renaming one breaks running jobs. */
export function createSummarizeActivities(deps: ActivityDeps) {
  return {
    async summarizeText(args: StepArgs): Promise<StepOutcome> {
      return runStep(
        deps,
        args,
        'summarize',
        async (ctx) => {
          const input = await ctx.input<JobInput<typeof summarize>>();
          const e = await ctx.effect(summarize.step('summarize'), '/v1/summaries', { text: input.text }, { storeWithResult: true });
          const result = { summary: e.response.summary, providerId: e.providerId, providerRequestId: e.providerRequestId };
          const notification = await declaredNotifications(deps, args, summarize, input, result);
          const resultStored = await completeWithOutbox(deps, ctx, result, notification);
          return { resultStored, notify: notification !== undefined };
        },
        { prefetchInput: true },
      );
    },
  };
}

export type SummarizeActivities = ReturnType<typeof createSummarizeActivities>;

export const summarizeJobType = jobType(summarize, {
  workflows: new URL('./workflow.ts', import.meta.url),
  activities: createSummarizeActivities,
});
