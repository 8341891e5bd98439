import { z } from 'zod';
import type { JobType } from '../workflows/job-types.js';

/** Input schemas per job type: they validate requests and generate the OpenAPI document. */
export const JOB_INPUT_SCHEMAS = {
  summarize: z.object({
    text: z.string().min(1, 'text must not be empty').max(100_000, 'text must be at most 100000 characters'),
    notifyEmail: z.email('notifyEmail must be an e-mail address').optional(),
  }).strict(),
  purchase: z.object({
    amountCents: z.number().int('amountCents must be a whole number of cents').positive('amountCents must be positive').max(100_000_000),
    currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code such as EUR'),
    customer: z.string().min(1).max(200),
    receiptEmail: z.email('receiptEmail must be an e-mail address'),
  }).strict(),
  transcribe: z.object({
    audioUrl: z.url({ protocol: /^https?$/, error: 'audioUrl must be an http(s) URL' }).max(2048, 'audioUrl must be at most 2048 characters'),
  }).strict(),
  // Scheduled only: one job per tenant and window, started by its Schedule (or the scan).
  // Submitting one over HTTP would make a second job for a window, so intake refuses it.
  digest: z.never({ error: 'digest jobs are started by their schedule (one per tenant and window); they cannot be submitted' })
    .describe('scheduled only: started by its Temporal Schedule, one job per tenant and window; POST /v1/jobs refuses it'),
} as const satisfies Record<JobType, z.ZodType>;

export const PRIORITY_SCHEMA = z.enum(['high', 'normal', 'low']);

export const SUBMIT_BODY_SCHEMA = z.object({
  type: z.string().min(1, 'type is required'),
  input: z.record(z.string(), z.unknown()),
  priority: PRIORITY_SCHEMA.optional(),
}).strict();
