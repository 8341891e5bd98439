/**
 * The notifications a succeeded job writes with its result: a job type's step passes this to
 * `completeWithOutbox(deps, ctx, result, notification)`, which writes them in the result's
 * transaction (one outbox row per target, store/outbox.ts `outboxRowsOf`).
 */
import type { StepArgs } from '../contract/job-types.js';
import { plannedNotifications, type JobNotify } from '../job-api/notify.js';
import { NOTIFICATION_BUNDLE } from '../store/outbox.js';
import { hasTenantWebhook } from '../store/tenant-webhooks.js';
import type { ActivityDeps } from './deps.js';

export async function declaredNotifications<I>(
  deps: Pick<ActivityDeps, 'pool'>,
  args: Pick<StepArgs, 'jobId' | 'jobType' | 'tenantId'>,
  definition: { notify: JobNotify<I> | null },
  input: I,
  result: unknown,
): Promise<{ kind: string; payload: Record<string, unknown> } | undefined> {
  const notify = definition.notify;
  if (!notify) return undefined;
  // A tenant without an endpoint gets no row (a set-up after the job finished misses it).
  const tenantHasWebhook = notify.completionWebhook !== null && (await hasTenantWebhook(deps.pool, args.tenantId));
  const rows = plannedNotifications(notify, { ...args, input, result, at: new Date(), tenantHasWebhook });
  if (rows.length === 0) return undefined;
  return rows.length === 1 ? rows[0] : { kind: NOTIFICATION_BUNDLE, payload: { rows } };
}
