import { z } from 'zod';
import { defineJob } from '../../job-api/workflow.js';

export const digest = defineJob({
  name: 'digest',
  workflowType: 'digestJob',
  description: 'scheduled: one per tenant and window, a digest of the previous window sent as one notification',
  // Scheduled only: one job per tenant and window, started by its Schedule (or the scan).
  // Submitting one over HTTP would make a second job for a window, so intake refuses it.
  input: z
    .never({ error: 'digest jobs are started by their schedule (one per tenant and window); they cannot be submitted' })
    .describe('scheduled only: started by its Temporal Schedule, one job per tenant and window; POST /v1/jobs refuses it'),
  effects: ['digest'],
  submittable: false,
});
