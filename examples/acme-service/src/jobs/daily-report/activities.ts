import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { mail, sendMail } from '../../upstreams/mail.js';
import { dailyReport, type DailyReportActivities } from './definition.js';

export function createDailyReportActivities(deps: ActivityDeps): DailyReportActivities {
  return {
    async sendDailyReport(args) {
      return runStep(deps, args, 'send', async (ctx) => {
        const window = await ctx.input<JobInput<typeof dailyReport>>();
        const e = await sendMail(
          ctx,
          dailyReport.step('send'),
          {
            to: `reports+${args.tenantId}@acme.test`,
            subject: `Daily report ${window.windowStart.slice(0, 10)}`,
            text: `Orders from ${window.windowStart} to ${window.windowEnd}.`,
          },
          { storeWithResult: true },
        );
        return { resultStored: await completeWithOutbox(deps, ctx, { messageId: e.response.messageId, windowStart: window.windowStart }) };
      });
    },
  };
}

export const dailyReportJobType = jobType(dailyReport, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createDailyReportActivities,
  upstreams: [mail],
});
