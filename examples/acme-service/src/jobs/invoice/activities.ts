// The Node side of `invoice`: each step is one effect through `ctx.effect`, keyed
// `<jobId>:<step>`, so a retry, a crash or a replay never charges or e-mails twice.
import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput, type StepArgs } from 'durable-jobs/jobs';
import { invoice, type InvoiceActivities } from './definition.js';

type Input = JobInput<typeof invoice>;

export function createInvoiceActivities(deps: ActivityDeps): InvoiceActivities {
  return {
    async chargeOrder(args) {
      return runStep(deps, args, 'charge', async (ctx) => {
        const input = await ctx.input<Input>();
        const e = await ctx.effect(invoice.step('charge'), '/v1/payments', { order: input.orderId, amountCents: input.amountCents });
        return { chargeId: e.providerId ?? 'unknown' };
      });
    },
    async emailInvoice(args: StepArgs) {
      return runStep(deps, args, 'email', async (ctx) => {
        const input = await ctx.input<Input>();
        const e = await ctx.effect(
          invoice.step('email'),
          '/v1/emails',
          { to: input.email, subject: `Invoice for order ${input.orderId}` },
          { storeWithResult: true },
        );
        return { resultStored: await completeWithOutbox(deps, ctx, { emailId: e.providerId, orderId: input.orderId }) };
      });
    },
  };
}

export const invoiceJobType = jobType(invoice, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createInvoiceActivities,
});
