import { budgetOf, runJob, stepActivities, type JobOutcome, type StepArgs } from '../../job-api/workflow.js';
import { digest } from './definition.js';
import type { DigestActivities } from './activities.js';

/**
 * `digest`: a scheduled job, one per tenant and window (its ID derives from both). It sends
 * one notification whose effect key is the job's, so a retry or a second trigger never
 * sends it twice.
 */
export async function digestJob(args: StepArgs): Promise<JobOutcome> {
  const steps = stepActivities<DigestActivities>(budgetOf(digest, args));
  return runJob(args, digest, () => steps.sendDigest(args), { admitInFirstStep: true });
}
