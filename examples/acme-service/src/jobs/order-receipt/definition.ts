// `order-receipt`: started by the shop's `order.paid` webhook (POST /v1/webhooks/shop, signed
// with the source's Standard Webhooks secret), declared here: the receipt e-mail, once per order
// however often the shop redelivers the event. Workflow-safe: Temporal bundles this file.
import { z } from 'zod';
import { budgetOf, defineJob, runJob, stepActivities, type JobOutcome, type StepArgs } from 'durable-jobs/jobs/workflow';

export const orderReceipt = defineJob({
  name: 'order-receipt',
  workflowType: 'orderReceiptJob',
  description: 'e-mail the receipt of an order the shop reports paid',
  input: z.object({ orderId: z.string().min(1), email: z.email(), amountCents: z.number().int().positive() }).strict(),
  effects: ['send'],
  submittable: false,
  webhook: {
    source: 'shop',
    events: ['order.paid'],
    route(event) {
      const { orderId, email, amountCents } = event.data;
      if (typeof orderId !== 'string' || typeof email !== 'string' || typeof amountCents !== 'number')
        return { invalid: 'data needs orderId, email (strings) and amountCents (a number)' };
      // One receipt per order: the key makes a redelivery, or a second event for the order, the same job.
      return { start: { input: { orderId, email, amountCents }, idempotencyKey: `order-${orderId}-receipt` } };
    },
  },
});

export interface OrderReceiptActivities {
  sendReceipt(args: StepArgs): Promise<{ resultStored: boolean }>;
}

export async function orderReceiptJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<OrderReceiptActivities>(budgetOf(orderReceipt, args));
  return runJob(args, orderReceipt, async () => steps.sendReceipt(args));
}
