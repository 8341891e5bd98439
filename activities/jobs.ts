import { Context } from '@temporalio/activity';
import { withTransaction } from '../lib/db.js';
import { failPendingOutbox, markOutbox, pendingOutboxForJob } from '../store/outbox.js';
import { setNotificationState, setStatus } from '../store/intents.js';
import { runEffect } from './effects.js';
import { failAttempt, withHeartbeat } from './attempt.js';
import { completeWithOutbox, runStep, type StepArgs, type StepDeps } from './job-steps.js';
import { DEFAULT_BUDGET, type JobState } from '../workflows/job-types.js';

interface SummarizeInput { text: string; notifyEmail?: string }
interface PurchaseInput { amountCents: number; currency: string; customer: string; receiptEmail: string }

export interface StepOutcome { resultStored: boolean; notify: boolean }

/** The job activities. Each function name is its Temporal activity type: renaming one breaks running jobs. */
export function createJobActivities(deps: StepDeps) {
  return {
    async summarizeText(args: StepArgs): Promise<StepOutcome> {
      return runStep(deps, args, 'summarize', async (ctx) => {
        const input = await ctx.input<SummarizeInput>();
        const e = await ctx.effect('summarize', '/v1/summaries', { text: input.text });
        const result = { summary: e.response.summary, providerId: e.providerId, providerRequestId: e.providerRequestId };
        const notification = input.notifyEmail
          ? { kind: 'email', payload: { to: input.notifyEmail, subject: 'Your summary is ready', body: `Job ${args.jobId} succeeded.` } }
          : undefined;
        const resultStored = await completeWithOutbox(deps, ctx, result, notification);
        return { resultStored, notify: notification !== undefined };
      });
    },

    /** First of two effects in sequence: a crash after it never charges twice. */
    async chargeCustomer(args: StepArgs): Promise<{ chargeId: string }> {
      return runStep(deps, args, 'charge', async (ctx) => {
        const input = await ctx.input<PurchaseInput>();
        const e = await ctx.effect('charge', '/v1/charges', { amountCents: input.amountCents, currency: input.currency, customer: input.customer });
        return { chargeId: String(e.providerId) };
      });
    },

    async sendReceipt(args: StepArgs & { chargeId: string }): Promise<StepOutcome> {
      return runStep(deps, args, 'receipt', async (ctx) => {
        const input = await ctx.input<PurchaseInput>();
        const e = await ctx.effect('receipt', '/v1/receipts', { chargeId: args.chargeId, email: input.receiptEmail });
        const resultStored = await completeWithOutbox(deps, ctx, { chargeId: args.chargeId, receiptId: e.providerId });
        return { resultStored, notify: false };
      });
    },

    /**
     * Delivers the job's pending outbox rows, each as its own effect (its key was fixed when
     * the row was written). It runs on its own retry budget; its failure never turns the
     * finished job back into an unfinished one.
     */
    async deliverOutbox(args: StepArgs): Promise<number> {
      const startedAt = new Date();
      try {
        return await withHeartbeat(async () => {
          const rows = await pendingOutboxForJob(deps.pool, args.jobId);
          for (const row of rows) {
            await runEffect(deps, {
              effectScope: args.effectScope ?? args.jobId, jobId: args.jobId, tenantId: args.tenantId,
              // The row's own key, never one rebuilt from this run: a replay job or the scan
              // delivering another job's row must present the key the upstream already knows.
              effectKey: row.effect_key, step: row.effect_key.slice(row.effect_key.lastIndexOf(':') + 1), path: '/v1/notifications',
              body: row.payload, timeoutMs: DEFAULT_BUDGET.upstreamTimeoutMs, startedAt,
            });
            await markOutbox(deps.pool, row.id, 'delivered', null);
          }
          if (rows.length > 0) await setNotificationState(deps.pool, args.jobId, 'sent');
          return rows.length;
        });
      } catch (err) {
        return failAttempt(deps, { jobId: args.jobId, step: 'notify', budget: DEFAULT_BUDGET, startedAt }, err);
      }
    },

    /** The notification failed for good: the job says so, and its outbox rows end `failed` with evidence. */
    async markNotificationFailed(args: StepArgs): Promise<void> {
      await withTransaction(deps.pool, async (tx) => {
        await failPendingOutbox(tx, args.jobId);
        await setNotificationState(tx, args.jobId, 'failed');
      });
    },

    /** Records a terminal or waiting state the workflow decided (cancelled, deferred, dead-lettered). */
    async recordJobState(args: StepArgs & { state: JobState; reason: string | null; error?: { errorClass: string; message: string; statusCode?: number } }): Promise<void> {
      Context.current().heartbeat();
      await setStatus(deps.pool, args.jobId, args.state, args.reason, args.error);
    },
  };
}

export type JobActivities = ReturnType<typeof createJobActivities>;
