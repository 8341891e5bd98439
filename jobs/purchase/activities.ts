import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput, type StepArgs } from '../../job-api/index.js';
import { purchase } from './definition.js';

type PurchaseInput = JobInput<typeof purchase>;

/** The `purchase` activities. Each function name is its Temporal activity type: renaming one breaks running jobs. */
export function createPurchaseActivities(deps: ActivityDeps) {
  return {
    /** First of two effects in sequence: a crash after it never charges twice. */
    async chargeCustomer(args: StepArgs): Promise<{ chargeId: string }> {
      return runStep(deps, args, 'charge', async (ctx) => {
        const input = await ctx.input<PurchaseInput>();
        const e = await ctx.effect(purchase.step('charge'), '/v1/charges', {
          amountCents: input.amountCents,
          currency: input.currency,
          customer: input.customer,
        });
        return { chargeId: String(e.providerId) };
      });
    },

    async sendReceipt(args: StepArgs & { chargeId: string }): Promise<{ resultStored: boolean; notify: boolean }> {
      return runStep(deps, args, 'receipt', async (ctx) => {
        const input = await ctx.input<PurchaseInput>();
        const e = await ctx.effect(
          purchase.step('receipt'),
          '/v1/receipts',
          { chargeId: args.chargeId, email: input.receiptEmail },
          { storeWithResult: true },
        );
        const resultStored = await completeWithOutbox(deps, ctx, { chargeId: args.chargeId, receiptId: e.providerId });
        return { resultStored, notify: false };
      });
    },
  };
}

export type PurchaseActivities = ReturnType<typeof createPurchaseActivities>;

export const purchaseJobType = jobType(purchase, {
  workflows: new URL('./workflow.ts', import.meta.url),
  activities: createPurchaseActivities,
});
