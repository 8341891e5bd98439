import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { mail, sendMail } from '../../upstreams/mail.js';
import { welcomeEmail, type WelcomeEmailActivities } from './definition.js';

export function createWelcomeEmailActivities(deps: ActivityDeps): WelcomeEmailActivities {
  return {
    async sendWelcomeEmail(args) {
      return runStep(deps, args, 'send', async (ctx) => {
        const input = await ctx.input<JobInput<typeof welcomeEmail>>();
        const e = await sendMail(
          ctx,
          welcomeEmail.step('send'),
          { to: input.email, subject: 'Welcome to Acme', text: `Hello ${input.name ?? 'there'}, welcome to Acme.` },
          { storeWithResult: true },
        );
        return { resultStored: await completeWithOutbox(deps, ctx, { messageId: e.response.messageId, providerId: e.providerId }) };
      });
    },
  };
}

export const welcomeEmailJobType = jobType(welcomeEmail, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createWelcomeEmailActivities,
  upstreams: [mail],
});
