import { defineJob } from '../../job-api/workflow.js';
import { z } from 'zod';

export const summarize = defineJob({
  name: 'summarize',
  workflowType: 'summarizeJob',
  description: 'summarize a text with the provider, then notify by e-mail (optional)',
  input: z
    .object({
      text: z.string().min(1, 'text must not be empty').max(100_000, 'text must be at most 100000 characters'),
      notifyEmail: z.email('notifyEmail must be an e-mail address').optional(),
    })
    .strict(),
  // `notify-email` is the outbox delivery's effect (`notify-<kind>`, `notify` below), made only when asked for.
  effects: ['summarize', 'notify-email'],
  effectsFor: (input) => (input.notifyEmail ? ['summarize', 'notify-email'] : ['summarize']),
  staleResult: true,
  fallback: true,
  // One short keyed call: where FAST_PATH_JOB_TYPES names it, the whole job runs in one workflow task.
  fastPath: { workflowType: 'summarizeJobLocal' },
  // The e-mail, when the input asks for one: an outbox row written with the result (`notify-email`).
  notify: {
    email: (input, _result, job) =>
      input.notifyEmail ? { to: input.notifyEmail, subject: 'Your summary is ready', text: `Job ${job.jobId} succeeded.` } : undefined,
  },
});
