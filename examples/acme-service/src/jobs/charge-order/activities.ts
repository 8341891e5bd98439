import type Stripe from 'stripe';
import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { createPaymentIntent, stripe } from '../../upstreams/stripe.js';
import { chargeOrder, type ChargeOrderActivities } from './definition.js';

export function createChargeOrderActivities(deps: ActivityDeps): ChargeOrderActivities {
  return {
    async charge(args) {
      return runStep(deps, args, 'charge', async (ctx) => {
        const input = await ctx.input<JobInput<typeof chargeOrder>>();
        const e = await ctx.effect(
          chargeOrder.step('charge'),
          createPaymentIntent({
            amount: input.amountCents,
            currency: input.currency,
            payment_method: input.paymentMethod,
            // A card charged now, no redirect: the job cannot wait on a customer.
            automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
            confirm: true,
            metadata: { orderId: input.orderId },
            ...(input.captureMethod ? { capture_method: input.captureMethod as Stripe.PaymentIntentCreateParams.CaptureMethod } : {}),
          }),
          { upstream: stripe, storeWithResult: true },
        );
        return {
          resultStored: await completeWithOutbox(deps, ctx, {
            orderId: input.orderId,
            paymentIntent: e.providerId,
            status: e.response.status,
          }),
        };
      });
    },
  };
}

export const chargeOrderJobType = jobType(chargeOrder, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createChargeOrderActivities,
  upstreams: [stripe],
});
