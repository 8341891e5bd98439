import { proxyActivities } from '@temporalio/workflow';
import { z } from 'zod';
import type { StepArgs } from '../../contract/job-types.js';
import { stepOptions } from '../../workflows/activity-options.js';
import { runJob, type JobOutcome } from '../../workflows/lifecycle.js';
import { budgetOf, defineJob } from '../../job-api/define.js';
import type { PurchaseActivities } from './activities.js';

export const purchase = defineJob({
  name: 'purchase',
  workflowType: 'purchaseJob',
  description: 'charge a customer, then send the receipt: two effects in sequence',
  input: z.object({
    amountCents: z.number().int('amountCents must be a whole number of cents').positive('amountCents must be positive').max(100_000_000),
    currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code such as EUR'),
    customer: z.string().min(1).max(200),
    receiptEmail: z.email('receiptEmail must be an e-mail address'),
  }).strict(),
  effects: ['charge', 'receipt'],
});

/**
 * `purchase`: charge, then receipt. Each step has its own effect key, so a crash between
 * them (or a replay) repeats neither: the charge is reused, only the receipt runs.
 */
export async function purchaseJob(args: StepArgs): Promise<JobOutcome> {
  const steps = proxyActivities<PurchaseActivities>(stepOptions(budgetOf(purchase, args)));
  return runJob(args, purchase, async () => {
    const { chargeId } = await steps.chargeCustomer(args);
    return steps.sendReceipt({ ...args, chargeId });
  });
}
