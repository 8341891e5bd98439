/** The bulk-action API's request bodies (services/bulk-actions.ts re-exports them). */
import { z } from 'zod';
import { BULK_ACTIONS } from '../contract/bulk-actions.js';

/** The actions a request may name: the bulk-action workflow's, and `replay` (dead letters, the replay workflow). */
export const REQUEST_ACTIONS = [...BULK_ACTIONS, 'replay'] as const;
export type RequestAction = (typeof REQUEST_ACTIONS)[number];

/** Default and largest `limit`: what one request may touch. */
export const DEFAULT_BULK_LIMIT = 1_000;
export const MAX_BULK_LIMIT = 10_000;

const shortText = z.string().trim().min(1, 'must not be empty').max(300, 'at most 300 characters');

/**
 * One filter shape for both kinds of target. Jobs (cancel, rerun, retry-now): the list filters
 * of `GET /v1/jobs` (state, type, tenantId, createdAfter, createdBefore, tag). Dead letters
 * (discard, replay): type, tenantId, errorClass, and a failure cluster (`cluster`, one cluster's
 * ID) or signature (`signature`, across types and tenants). The service refuses a key that does
 * not apply to the action, naming it.
 */
export const BULK_FILTER = z
  .object({
    state: z.union([z.string(), z.array(z.string())]).optional(),
    type: shortText.optional(),
    tenantId: shortText.optional(),
    createdAfter: z.string().optional(),
    createdBefore: z.string().optional(),
    tag: z.string().optional(),
    errorClass: shortText.optional(),
    cluster: z
      .string()
      .regex(/^cl-[0-9a-f]{20}$/, 'a cluster ID (cl-…) from GET /v1/admin/dead-letters/clusters')
      .optional(),
    signature: z
      .string()
      .regex(/^sig-[0-9a-f]{16}$/, 'a signature (sig-…) from GET /v1/admin/dead-letters/clusters')
      .optional(),
  })
  .strict();
export type BulkFilter = z.infer<typeof BULK_FILTER>;

export const JOB_FILTER_KEYS = ['state', 'type', 'tenantId', 'createdAfter', 'createdBefore', 'tag'] as const;
export const DEAD_LETTER_FILTER_KEYS = ['type', 'tenantId', 'errorClass', 'cluster', 'signature'] as const;

export const BULK_REQUEST = z
  .object({
    action: z.enum(REQUEST_ACTIONS, { error: `one of ${REQUEST_ACTIONS.join(', ')}` }),
    ids: z.array(shortText).min(1).max(MAX_BULK_LIMIT).optional(),
    filter: BULK_FILTER.optional(),
    /** The most targets this request may touch; more matching is refused (422). Default 1000. */
    limit: z.number().int().min(1).max(MAX_BULK_LIMIT).optional(),
    dryRun: z.boolean().optional(),
    batchSize: z.number().int().min(1).max(100).optional(),
    concurrency: z.number().int().min(1).max(20).optional(),
    ratePerMinute: z.number().int().min(1).max(60_000).optional(),
    reason: z.string().trim().min(1).max(500).optional(),
    fromStep: shortText.optional(),
  })
  .strict()
  .refine((b) => (b.ids === undefined) !== (b.filter === undefined), { message: 'send exactly one of "ids" or "filter"', path: ['ids'] });
export type BulkRequest = z.infer<typeof BULK_REQUEST>;

export const RERUN_REQUEST = z.object({ fromStep: shortText.optional(), dryRun: z.boolean().optional() }).strict();
export const STOP_REQUEST = z.object({ reason: z.string().trim().max(500).optional() }).strict();
export const CLUSTER_QUERY = z
  .object({
    state: z.enum(['open', 'replaying', 'replayed', 'discarded']).optional(),
    tenantId: shortText.optional(),
    type: shortText.optional(),
  })
  .strict();
