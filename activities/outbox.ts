import { DEFAULT_BUDGET, type StepArgs } from '../contract/job-types.js';
import { setNotificationState } from '../store/intents.js';
import { withTransaction } from '../lib/db.js';
import { failPendingOutbox, markOutbox, pendingOutboxForJob } from '../store/outbox.js';
import { failAttempt, withHeartbeat } from './attempt.js';
import type { ActivityDeps } from './deps.js';
import { runEffect } from './effects.js';

/** The outbox activities every job type shares. Function names are Temporal activity types. */
export function createOutboxActivities(deps: ActivityDeps) {
  return {
    /**
     * Delivers the job's pending outbox rows, each as its own effect (its key was fixed when
     * the row was written). It runs on its own retry budget; its failure never turns the
     * finished job back into an unfinished one.
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
              path: '/v1/notifications',
              body: row.payload,
              timeoutMs: timeouts.upstreamTimeoutMs,
              startedAt,
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
