import { proxyActivities } from '@temporalio/workflow';
import { z } from 'zod';
import type { StepArgs } from '../../contract/job-types.js';
import { stepOptions } from '../../workflows/activity-options.js';
import { runJob, type JobOutcome } from '../../workflows/lifecycle.js';
import { budgetOf, defineJob } from '../../job-api/define.js';
import type { DigestActivities } from './activities.js';

export const digest = defineJob({
  name: 'digest',
  workflowType: 'digestJob',
  description: 'scheduled: one per tenant and window, a digest of the previous window sent as one notification',
  // Scheduled only: one job per tenant and window, started by its Schedule (or the scan).
  // Submitting one over HTTP would make a second job for a window, so intake refuses it.
  input: z.never({ error: 'digest jobs are started by their schedule (one per tenant and window); they cannot be submitted' })
    .describe('scheduled only: started by its Temporal Schedule, one job per tenant and window; POST /v1/jobs refuses it'),
  effects: ['digest'],
  submittable: false,
});

/**
 * `digest`: a scheduled job, one per tenant and window (its ID derives from both). It sends
 * one notification whose effect key is the job's, so a retry or a second trigger never
 * sends it twice.
 */
export async function digestJob(args: StepArgs): Promise<JobOutcome> {
  const steps = proxyActivities<DigestActivities>(stepOptions(budgetOf(digest, args)));
  return runJob(args, digest, () => steps.sendDigest(args));
}
