/**
 * What a job type's activities may read of the product's own records, through the public face
 * (`durable-jobs/jobs`) instead of the store.
 */
import type { ActivityDeps } from './deps.js';
import { withTransaction } from '../lib/db.js';
import { countFinishedJobs, getIntent } from '../store/intents.js';
import { claimEarlyDeliveries, lockSubject } from '../store/webhook-deliveries.js';

/** When the job's intent was accepted; undefined for a job this database does not hold. */
export async function intentCreatedAt(deps: Pick<ActivityDeps, 'pool'>, jobId: string): Promise<Date | undefined> {
  return (await getIntent(deps.pool, jobId))?.created_at;
}

/** A tenant's jobs that finished in [from, to), counted by final status; `exceptTypes` are left out. */
export function finishedJobCounts(
  deps: Pick<ActivityDeps, 'pool'>,
  tenantId: string,
  from: string,
  to: Date,
  opts: { exceptTypes?: readonly string[] } = {},
): Promise<Record<string, number>> {
  return countFinishedJobs(deps.pool, tenantId, from, to, opts.exceptTypes);
}

/** A webhook event a job claimed: its delivery ID, the event's data and the signal argument its route made. */
export interface ClaimedWebhook {
  webhookId: string;
  payload: Record<string, unknown>;
  /** What the type's `webhook.route` chose to signal with; null for a delivery recorded before routes (0034). */
  signalArg: unknown;
}

/**
 * Claims, for `jobId`, the webhook deliveries of `eventType` about `subject` (a provider ID) that
 * arrived before the job stored that ID, under the subject's lock so the receiver and the job
 * never both take one. Only deliveries from a source of no tenant or of the job's own tenant are
 * claimed; one from a source bound to another tenant is refused (recorded) instead (F3).
 * Returns the claimed ones, oldest first.
 */
export async function claimEarlyWebhooks(
  deps: Pick<ActivityDeps, 'pool'>,
  eventType: string,
  subject: string,
  jobId: string,
): Promise<ClaimedWebhook[]> {
  const rows = await withTransaction(deps.pool, async (tx) => {
    await lockSubject(tx, eventType, subject);
    return claimEarlyDeliveries(tx, eventType, subject, jobId);
  });
  return rows.map((d) => ({ webhookId: d.webhook_id, payload: d.payload, signalArg: d.signal_arg }));
}
