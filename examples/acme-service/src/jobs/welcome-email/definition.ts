// `welcome-email`: the welcome e-mail over SMTP (src/upstreams/mail.ts), once per user however
// often the worker dies or the mail server goes away. Workflow-safe: Temporal bundles this file.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

export const welcomeEmail = defineJob({
  name: 'welcome-email',
  workflowType: 'welcomeEmailJob',
  description: 'send a new user the welcome e-mail over SMTP',
  input: z.object({ userId: z.string().min(1), email: z.email(), name: z.string().max(100).optional() }).strict(),
  effects: ['send'],
});

export interface WelcomeEmailActivities {
  sendWelcomeEmail(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function welcomeEmailJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<WelcomeEmailActivities>(budgetOf(welcomeEmail, args));
  return runJob(args, welcomeEmail, async () => steps.sendWelcomeEmail(args));
}
