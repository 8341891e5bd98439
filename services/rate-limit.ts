/**
 * The intake rate limit per tenant (issue 38 §5): a token bucket in Postgres shared by every
 * API process and every `durable-jobs/client` (store/rate-limit.ts), configured on the tenant
 * (`PATCH /v1/admin/tenants/{id}` `{"intakeRatePerSecond", "intakeBurst"}`). Checked before
 * anything of the submit is written, so a refused submit leaves nothing behind.
 */
import { z } from 'zod';
import { pgOr503, type Db } from '../lib/db.js';
import { RateLimitedError } from '../lib/errors.js';
import { takeToken } from '../store/rate-limit.js';

/** The seconds until the bucket holds a whole token again: at least 1 (Retry-After is whole seconds). */
export function retryAfterSeconds(tokens: number, ratePerSecond: number): number {
  if (!(ratePerSecond > 0)) return 1;
  return Math.max(1, Math.ceil((1 - Math.min(1, Math.max(0, tokens))) / ratePerSecond));
}

/**
 * Takes a token for one submit of the tenant, or throws `RateLimitedError` with when to
 * retry. A tenant without a limit passes with one read. `onLimited` counts the refusal
 * (`durable_jobs_intake_rate_limited_total`).
 */
export async function admitSubmit(db: Db, tenantId: string, onLimited?: () => void): Promise<void> {
  const take = await pgOr503(() => takeToken(db, tenantId), 'Postgres cannot take the job right now');
  if (!take || take.granted) return;
  onLimited?.();
  const after = retryAfterSeconds(take.tokens, take.ratePerSecond);
  throw new RateLimitedError(
    `tenant "${tenantId}" submits faster than its intake limit of ${take.ratePerSecond}/s; nothing was accepted: retry after ${after} s`,
    after,
  );
}

/** The limit fields of `PATCH /v1/admin/tenants/{id}`: null removes the limit. */
export const INTAKE_LIMIT_SHAPE = {
  intakeRatePerSecond: z
    .number({ error: 'a number of submits per second, or null for no limit' })
    .gt(0, 'must be above 0 (null removes the limit)')
    .max(100_000, 'must be at most 100000 per second')
    .nullable()
    .optional(),
  intakeBurst: z
    .number({ error: 'a whole number of submits, or null for one second of the rate' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(1_000_000, 'must be at most 1000000')
    .nullable()
    .optional(),
};
