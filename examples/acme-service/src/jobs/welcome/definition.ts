// `welcome`: one e-mail to a new user, on the deployment's shared task queue.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

export const welcome = defineJob({
  name: 'welcome',
  workflowType: 'welcomeJob',
  description: 'send a new user the welcome e-mail',
  input: z.object({ userId: z.string().min(1), email: z.email() }).strict(),
  effects: ['send'],
});

export interface WelcomeActivities {
  sendWelcome(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function welcomeJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<WelcomeActivities>(budgetOf(welcome, args));
  return runJob(args, welcome, async () => steps.sendWelcome(args));
}
