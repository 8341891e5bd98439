// `order-shipped`: records that an order left the warehouse, and tells the tenant's own
// systems through its completion webhook (a signed `job.succeeded`, src/receiver.ts).
import { z } from 'zod';
import {
  budgetOf,
  defineJob,
  deliverNotifications,
  runJob,
  stepActivities,
  type JobOutcome,
  type StepArgs,
} from 'durable-jobs/jobs/workflow';

export const orderShipped = defineJob({
  name: 'order-shipped',
  workflowType: 'orderShippedJob',
  description: 'record a shipped order and post job.succeeded to the tenant',
  input: z.object({ orderId: z.string().min(1).max(40), carrier: z.string().min(1).max(40) }).strict(),
  effects: ['notify-completion-webhook'],
  // A receiver may be down for a while: retries spread over its outage, at most 8 s apart.
  budget: { backoffBaseMs: 1_000, backoffCapMs: 8_000 },
  notify: { completionWebhook: { includeResult: true } },
});

export interface OrderShippedActivities {
  recordShipment(args: StepArgs): Promise<{ resultStored: boolean; notify: boolean }>;
}

export async function orderShippedJob(args: StepArgs): Promise<JobOutcome> {
  const budget = budgetOf(orderShipped, args);
  const steps = stepActivities<OrderShippedActivities>(budget);
  return runJob(args, orderShipped, async () => {
    const outcome = await steps.recordShipment(args);
    // The job is succeeded from here on; the delivery retries on its own budget.
    if (outcome.notify) await deliverNotifications(args, budget);
    return outcome;
  });
}
