import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { welcome, type WelcomeActivities } from './definition.js';

export function createWelcomeActivities(deps: ActivityDeps): WelcomeActivities {
  return {
    async sendWelcome(args) {
      return runStep(deps, args, 'send', async (ctx) => {
        const input = await ctx.input<JobInput<typeof welcome>>();
        const e = await ctx.effect(welcome.step('send'), '/v1/emails', { to: input.email, template: 'welcome' }, { storeWithResult: true });
        return { resultStored: await completeWithOutbox(deps, ctx, { emailId: e.providerId }) };
      });
    },
  };
}

export const welcomeJobType = jobType(welcome, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createWelcomeActivities,
});
