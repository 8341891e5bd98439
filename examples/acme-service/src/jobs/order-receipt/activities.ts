import { completeWithOutbox, jobType, runStep, type ActivityDeps, type JobInput } from 'durable-jobs/jobs';
import { mail, sendMail } from '../../upstreams/mail.js';
import { orderReceipt, type OrderReceiptActivities } from './definition.js';

export function createOrderReceiptActivities(deps: ActivityDeps): OrderReceiptActivities {
  return {
    async sendReceipt(args) {
      return runStep(deps, args, 'send', async (ctx) => {
        const order = await ctx.input<JobInput<typeof orderReceipt>>();
        const e = await sendMail(
          ctx,
          orderReceipt.step('send'),
          {
            to: order.email,
            subject: `Your receipt for order ${order.orderId}`,
            text: `We received ${(order.amountCents / 100).toFixed(2)} for order ${order.orderId}. Thank you.`,
          },
          { storeWithResult: true },
        );
        return { resultStored: await completeWithOutbox(deps, ctx, { messageId: e.response.messageId, orderId: order.orderId }) };
      });
    },
  };
}

export const orderReceiptJobType = jobType(orderReceipt, {
  workflows: new URL('./definition.ts', import.meta.url),
  activities: createOrderReceiptActivities,
  upstreams: [mail],
});
