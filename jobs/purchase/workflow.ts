import { budgetOf, runJob, stepActivities, type JobOutcome, type StepArgs } from '../../job-api/workflow.js';
import { purchase } from './definition.js';
import type { PurchaseActivities } from './activities.js';

/**
 * `purchase`: charge, then receipt. Each step has its own effect key, so a crash between
 * them (or a replay) repeats neither: the charge is reused, only the receipt runs.
 */
export async function purchaseJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<PurchaseActivities>(budgetOf(purchase, args));
  return runJob(
    args,
    purchase,
    async () => {
      const { chargeId } = await steps.chargeCustomer(args);
      return steps.sendReceipt({ ...args, chargeId });
    },
    { admitInFirstStep: true },
  );
}
