import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { StepArgs } from '../activities/job-steps.js';
import { budgetFor } from './job-types.js';
import { runJob, stepOptions, type JobOutcome } from './lifecycle.js';

/**
 * `digest`: a scheduled job, one per tenant and window (its ID derives from both). It sends
 * one notification whose effect key is the job's, so a retry or a second trigger never
 * sends it twice.
 */
export async function digestJob(args: StepArgs): Promise<JobOutcome> {
  const steps = proxyActivities<Activities>(stepOptions(budgetFor(args)));
  return runJob(args, () => steps.sendDigest(args));
}
