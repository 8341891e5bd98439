/**
 * What a job type's activities may read of the product's own records, through the public face
 * (`durable-jobs/jobs`) instead of the store: the shipped `digest` and `transcribe` need these
 * until job definitions can declare their schedule and webhook triggers.
 */
import type { ActivityDeps } from './deps.js';
import { withTransaction } from '../lib/db.js';
import { countFinishedJobs, getIntent } from '../store/intents.js';
import { claimEarlyDeliveries, lockSubject } from '../store/webhook-deliveries.js';

/** When the job's intent was accepted; undefined for a job this database does not hold. */
export async function intentCreatedAt(deps: Pick<ActivityDeps, 'pool'>, jobId: string): Promise<Date | undefined> {
  return (await getIntent(deps.pool, jobId))?.created_at;
}

/** A tenant's jobs (digests excluded) that finished in [from, to), counted by final status. */
export function finishedJobCounts(
  deps: Pick<ActivityDeps, 'pool'>,
  tenantId: string,
  from: string,
  to: Date,
): Promise<Record<string, number>> {
  return countFinishedJobs(deps.pool, tenantId, from, to);
}

/**
 * Claims, for `jobId`, the webhook deliveries of `eventType` about `subject` (a provider ID) that
 * arrived before the job stored that ID, under the subject's lock so the receiver and the job
 * never both take one. Returns them (ID and payload), oldest first.
 */
export async function claimEarlyWebhooks(
  deps: Pick<ActivityDeps, 'pool'>,
  eventType: string,
  subject: string,
  jobId: string,
): Promise<Array<{ webhookId: string; payload: Record<string, unknown> }>> {
  const rows = await withTransaction(deps.pool, async (tx) => {
    await lockSubject(tx, eventType, subject);
    return claimEarlyDeliveries(tx, eventType, subject, jobId);
  });
  return rows.map((d) => ({ webhookId: d.webhook_id, payload: d.payload }));
}
