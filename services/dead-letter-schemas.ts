/** The dead-letter API's request bodies and queries (services/dead-letters.ts re-exports them). */
import { z } from 'zod';
import { DEAD_LETTER_STATES } from '../store/dead-letters.js';

const shortText = z.string().min(1).max(200);
export const FILTER_SCHEMA = z
  .object({
    state: z.literal('open', { error: 'a replay filter only selects open dead letters' }).optional(),
    jobType: shortText.optional(),
    tenantId: shortText.optional(),
    errorClass: shortText.optional(),
    statusCode: z.number().int().min(100).max(599).optional(),
    since: z.iso.datetime({ offset: true }).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
    limit: z.number().int().min(1).max(10_000).optional(),
  })
  .strict();
export const REPLAY_SCHEMA = z
  .object({
    ids: z.array(shortText).min(1).max(10_000).optional(),
    filter: FILTER_SCHEMA.optional(),
    dryRun: z.boolean().optional(),
    batchSize: z.number().int().min(1).max(100).optional(),
    concurrency: z.number().int().min(1).max(50).optional(),
    ratePerMinute: z.number().int().min(1).max(6_000).optional(),
    maxFailures: z.number().int().min(0).max(100_000).optional(),
    keepOpenSeconds: z.number().int().min(0).max(3_600).optional(),
  })
  .strict()
  .refine((b) => (b.ids === undefined) !== (b.filter === undefined), { message: 'send exactly one of "ids" or "filter"', path: ['ids'] });
export const LIST_SCHEMA = z
  .object({
    state: z.enum(DEAD_LETTER_STATES as [string, ...string[]]).optional(),
    jobType: shortText.optional(),
    tenantId: shortText.optional(),
    errorClass: shortText.optional(),
    limit: z.coerce.number().int().min(1).max(1_000).default(100),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();
export const DISCARD_SCHEMA = z.object({ reason: z.string().trim().min(1, 'reason is required').max(500) }).strict();
export const ADD_SCHEMA = z.object({ ids: z.array(shortText).min(1).max(10_000) }).strict();
export const STOP_SCHEMA = z.object({ reason: z.string().max(500).optional() }).strict();
