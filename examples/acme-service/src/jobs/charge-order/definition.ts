// `charge-order`: one Stripe PaymentIntent for an order (src/upstreams/stripe.ts), charged once
// however often the step is retried, the worker dies or the job is replayed.
// Workflow-safe: Temporal bundles this file.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

export const chargeOrder = defineJob({
  name: 'charge-order',
  workflowType: 'chargeOrderJob',
  description: "charge an order's PaymentIntent with Stripe",
  input: z
    .object({
      orderId: z.string().min(1),
      amountCents: z.number().int().positive(),
      currency: z.string().length(3),
      paymentMethod: z.string().min(1),
      /** As the shop's checkout sent it; Stripe checks it (`automatic`, `automatic_async`, `manual`). */
      captureMethod: z.string().optional(),
    })
    .strict(),
  effects: ['charge'],
});

export interface ChargeOrderActivities {
  charge(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function chargeOrderJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<ChargeOrderActivities>(budgetOf(chargeOrder, args));
  return runJob(args, chargeOrder, async () => steps.charge(args));
}
