import { DEFAULT_BUDGET, type StepArgs } from '../contract/job-types.js';
import { setNotificationState } from '../store/intents.js';
import { withTransaction } from '../lib/db.js';
import { failPendingOutbox, markOutbox, pendingOutboxForJob, type OutboxRow } from '../store/outbox.js';
import { failAttempt, withHeartbeat } from './attempt.js';
import type { ActivityDeps } from './deps.js';
import { runEffect, type EffectSpec } from './effects.js';
import type { EffectCall, Upstream } from '../job-api/upstream.js';
import { notifyConfigFrom, type NotifyConfig } from './notify-config.js';
import { emailDelivery, type StoredEmail } from './notify-email.js';
import { completionWebhookCall, completionWebhookUpstream } from './notify-webhook.js';

/** The concurrency scope of completion-webhook deliveries: not a job type (':' is never in a type's name). */
const WEBHOOK_SLOT_SCOPE = 'notify:completion-webhook';

/**
 * The outbox activities every job type shares. Function names are Temporal activity types.
 * `config` defaults to the worker's environment, read once here (SMTP_URL, SMTP_FROM,
 * COMPLETION_WEBHOOK_*: activities/notify-config.ts), so a wrong setting stops the worker at start.
 */
export function createOutboxActivities(
  deps: ActivityDeps,
  config: NotifyConfig = notifyConfigFrom(
    process.env,
    deps.jobs.names.some((t) => deps.jobs.get(t)?.notify?.email),
  ),
) {
  return {
    /**
     * Delivers the job's pending outbox rows, each as its own effect (its key was fixed when
     * the row was written) through its target's upstream. It runs on its own retry budget; its
     * failure never turns the finished job back into an unfinished one.
     */
    async deliverOutbox(args: StepArgs): Promise<number> {
      const startedAt = new Date();
      // The job's own budget (with its `JOB_BUDGETS` override) times each call and its back-off.
      const timeouts = { ...(deps.jobs.get(args.jobType)?.budget ?? DEFAULT_BUDGET), ...args.budget };
      try {
        return await withHeartbeat(async () => {
          const rows = await pendingOutboxForJob(deps.pool, args.jobId);
          for (const row of rows) {
            await runEffect(deps, {
              effectScope: args.effectScope ?? args.jobId,
              jobId: args.jobId,
              tenantId: args.tenantId,
              // The row's own key, never one rebuilt from this run: a replay job or the scan
              // delivering another job's row must present the key the upstream already knows.
              effectKey: row.effect_key,
              step: row.effect_key.slice(row.effect_key.lastIndexOf(':') + 1),
              timeoutMs: timeouts.upstreamTimeoutMs,
              startedAt,
              ...deliveryOf(deps, config, args, row),
            });
            await markOutbox(deps.pool, row.id, 'delivered', null);
          }
          if (rows.length > 0) await setNotificationState(deps.pool, args.jobId, 'sent');
          return rows.length;
        });
      } catch (err) {
        return failAttempt(deps, { jobId: args.jobId, step: 'notify', budget: timeouts, startedAt }, err);
      }
    },

    /** The notification failed for good: the job says so, and its outbox rows end `failed` with evidence. */
    async markNotificationFailed(args: StepArgs): Promise<void> {
      await withTransaction(deps.pool, async (tx) => {
        await failPendingOutbox(tx, args.jobId);
        await setNotificationState(tx, args.jobId, 'failed');
      });
    },
  };
}

interface Delivery {
  call: EffectCall;
  through: Upstream;
  slots?: EffectSpec['slots'];
}

/**
 * A row's call and the upstream it goes through, by its kind. A completion webhook holds a
 * slot of its own scope while it calls (`COMPLETION_WEBHOOK_CONCURRENCY`), so a slow receiver
 * takes at most that many of the workers' calls; e-mail (any other kind: rows written before
 * the targets existed are e-mails) goes through SMTP or the provider.
 */
function deliveryOf(deps: ActivityDeps, config: NotifyConfig, args: StepArgs, row: OutboxRow): Delivery {
  if (row.kind === 'completion-webhook') {
    return {
      call: completionWebhookCall(deps.pool, {
        tenantId: args.tenantId,
        event: row.payload,
        allowPrivate: config.completionWebhook.allowPrivate,
      }),
      through: completionWebhookUpstream,
      slots: {
        jobType: WEBHOOK_SLOT_SCOPE,
        limits: { perTenant: config.completionWebhook.perTenant, global: config.completionWebhook.global },
      },
    };
  }
  return emailDelivery(config, { provider: deps.provider, tenantId: args.tenantId, email: row.payload as unknown as StoredEmail });
}
