import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { StepArgs } from '../activities/job-steps.js';
import { budgetFor } from './job-types.js';
import { runJob, stepOptions, type JobOutcome } from './lifecycle.js';


/**
 * `purchase`: charge, then receipt. Each step has its own effect key, so a crash between
 * them (or a replay) repeats neither: the charge is reused, only the receipt runs.
 */
export async function purchaseJob(args: StepArgs): Promise<JobOutcome> {
  const steps = proxyActivities<Activities>(stepOptions(budgetFor(args)));
  return runJob(args, async () => {
    const { chargeId } = await steps.chargeCustomer(args);
    return steps.sendReceipt({ ...args, chargeId });
  });
}
