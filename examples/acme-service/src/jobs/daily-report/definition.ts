// `daily-report`: started only by its schedule, declared here: at 06:00 UTC each tenant's report
// of the day before goes out by e-mail (src/upstreams/mail.ts). One job per tenant and day:
// a repeated firing, a manual trigger or the missed-window scan finds the same job.
// Workflow-safe: Temporal bundles this file.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

const DAY = 24 * 3_600_000;

export const dailyReport = defineJob({
  name: 'daily-report',
  workflowType: 'dailyReportJob',
  description: "e-mail a tenant's report of the day before, every day at 06:00 UTC",
  input: z.object({ windowStart: z.iso.datetime(), windowEnd: z.iso.datetime() }).strict(),
  effects: ['send'],
  submittable: false,
  schedule: {
    cron: '0 6 * * *',
    window: { length: DAY, offset: 6 * 3_600_000 },
    perTenant: true,
    catchupWindow: 6 * 3_600_000,
  },
});

export interface DailyReportActivities {
  sendDailyReport(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function dailyReportJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<DailyReportActivities>(budgetOf(dailyReport, args));
  return runJob(args, dailyReport, async () => steps.sendDailyReport(args));
}
