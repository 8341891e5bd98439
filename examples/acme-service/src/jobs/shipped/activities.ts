import { completeWithOutbox, declaredNotifications, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { orderShipped, type OrderShippedActivities } from './definition.js';

export function createOrderShippedActivities(deps: ActivityDeps): OrderShippedActivities {
  return {
    async recordShipment(args) {
      return runStep(deps, args, 'record', async (ctx) => {
        const input = await ctx.input<JobInput<typeof orderShipped>>();
        const result = { orderId: input.orderId, carrier: input.carrier };
        // The declared completion webhook, written with the result in one transaction.
        const notification = await declaredNotifications(deps, args, orderShipped, input, result);
        return { resultStored: await completeWithOutbox(deps, ctx, result, notification), notify: notification !== undefined };
      });
    },
  };
}

export const orderShippedJobType = jobType(orderShipped, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createOrderShippedActivities,
});
