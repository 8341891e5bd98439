import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { onStartPath, startJobWorkflow } from '../services/start-job.js';
import { withTransaction } from '../lib/db.js';
import { execution } from '../lib/temporal.js';
import { endReplay, insertAction, listStuckReplays, replayStartedBy, type DeadLetterRow } from '../store/dead-letters.js';
import { getIntent } from '../store/intents.js';
import { claimStalePendingSignal, listPendingSignals, setSignalOutcome, type DeliveryRow } from '../store/webhook-deliveries.js';
import { routeEvent, webhookRoutes } from '../services/webhook-routes.js';
import { withHeartbeat } from './attempt.js';
import type { StepArgs } from '../contract/job-types.js';
import type { ActivityDeps } from './deps.js';

export interface ReplayRepairs {
  started: number;
  finished: number;
}

/** Repairs of the compensation scan for replays and webhooks. Function names are Temporal activity types. */
export function createScanRepairActivities(deps: ActivityDeps) {
  const routes = webhookRoutes(deps.jobs);
  /**
   * The signal a pending delivery sends: the one its route chose when it came in; for a row
   * recorded without one, its type's route asked again (a pure function of the event).
   */
  function signalOf(d: DeliveryRow): { name: string; arg: unknown } | undefined {
    if (d.signal_name) return { name: d.signal_name, arg: d.signal_arg };
    const r = routeEvent(routes, {
      webhookId: d.webhook_id,
      source: d.source,
      tenantId: d.source_tenant_id,
      type: d.event_type,
      data: d.payload,
    });
    return r.kind === 'signal' ? { name: r.name, arg: r.arg } : undefined;
  }

  /** Ends a stuck replay from its job's outcome, in the name of whoever started it; false when it had already ended. */
  async function endStuckReplay(
    dl: DeadLetterRow,
    replayJobId: string,
    outcome: 'succeeded' | 'failed',
    jobStatus: string,
  ): Promise<boolean> {
    return withTransaction(deps.pool, async (tx) => {
      if (!(await endReplay(tx, dl.id, replayJobId, outcome))) return false;
      await insertAction(tx, {
        deadLetterId: dl.id,
        action: outcome === 'succeeded' ? 'replay_succeeded' : 'replay_failed',
        actor: (await replayStartedBy(tx, dl.id)) ?? 'system',
        details: {
          replayId: dl.replay_id,
          replayJobId,
          recordedBy: 'compensation scan',
          ...(outcome === 'failed' ? { message: `replay job closed without an outcome (${jobStatus})` } : {}),
        },
      });
      return true;
    });
  }

  return {
    /**
     * Dead letters left `replaying` once their replay request's workflow is closed (it was
     * terminated or reset, so nothing else will end them). While that workflow runs, it starts
     * and ends its replays itself and the scan keeps out (no second starter). Then: a replay job
     * that never started (claimed, then the request died before `startChild`) is started, as a
     * replay (the original's effect scope); one that closed ends the replay from its own outcome
     * (`replayed`, or back to `open` so it can be replayed again); a running one is left to finish.
     */
    async repairStuckReplays(a: { now: string; graceMs: number; limit: number }): Promise<ReplayRepairs> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        const n: ReplayRepairs = { started: 0, finished: 0 };
        for (const dl of await listStuckReplays(deps.pool, new Date(Date.parse(a.now) - a.graceMs), a.limit)) {
          const replayJobId = dl.replay_job_id;
          if (!replayJobId || !dl.replay_id || (await execution(ctx.client, dl.replay_id)).kind === 'running') continue;
          const job = await execution(ctx.client, replayJobId);
          if (job.kind === 'running') continue;
          const intent = await getIntent(deps.pool, replayJobId);
          if (!intent || !deps.jobs.has(dl.job_type)) {
            deps.log.warn({ deadLetterId: dl.id, replayJobId }, 'scan: stuck replay without a known job type or job row left alone');
            continue;
          }
          if (job.kind === 'absent') {
            const args: StepArgs = {
              jobId: replayJobId,
              tenantId: dl.tenant_id,
              jobType: dl.job_type,
              priority: intent.priority,
              effectScope: dl.job_id,
            };
            if (
              await startJobWorkflow(
                ctx.client,
                ctx.info.taskQueue,
                onStartPath(deps.jobs.require(args.jobType), deps.fastPathTypes),
                args,
                deps.jobBudgets,
              )
            ) {
              n.started += 1;
              deps.log.info(
                { deadLetterId: dl.id, replayJobId, repair: 'replay_started' },
                'scan: started a replay job its replay request never started',
              );
            }
            continue;
          }
          // Closed: the job's row says how it ended (it is written before the workflow closes).
          const outcome = intent.status === 'succeeded' ? 'succeeded' : 'failed';
          if (await endStuckReplay(dl, replayJobId, outcome, job.status)) {
            n.finished += 1;
            deps.log.info(
              { deadLetterId: dl.id, replayJobId, outcome, repair: 'replay_finished' },
              'scan: ended a replay its replay request left open',
            );
          }
        }
        return n;
      });
    },

    /**
     * Signals again the jobs of webhook deliveries stuck `pending_signal` (recorded, but the
     * signal failed and the provider stopped redelivering). Claimed first, so concurrent scans
     * signal each once; the job ignores a webhook-id it already has, so a repeat is harmless.
     * A signal that fails again stays pending for the next scan.
     */
    async resignalPendingWebhooks(a: { now: string; graceMs: number; limit: number }): Promise<number> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        const cutoff = new Date(Date.parse(a.now) - a.graceMs);
        let signalled = 0;
        for (const d of await listPendingSignals(deps.pool, cutoff, a.limit)) {
          const signal = signalOf(d);
          if (!d.job_id || !signal) continue;
          if (!(await claimStalePendingSignal(deps.pool, d.source, d.webhook_id, cutoff))) continue;
          const at = { source: d.source, webhookId: d.webhook_id, jobId: d.job_id };
          try {
            await ctx.client.workflow.getHandle(d.job_id).signal(signal.name, signal.arg);
          } catch (err) {
            if (err instanceof WorkflowNotFoundError) {
              await setSignalOutcome(deps.pool, d.source, d.webhook_id, 'job_closed');
              deps.log.info({ ...at, repair: 'webhook_job_closed' }, 'scan: pending webhook for a job that already finished');
              continue;
            }
            deps.log.warn(
              { ...at, err: { name: (err as Error).name, message: (err as Error).message } },
              'scan: webhook could not be signalled again; it stays pending_signal',
            );
            continue;
          }
          await setSignalOutcome(deps.pool, d.source, d.webhook_id, 'signalled');
          signalled += 1;
          deps.log.info({ ...at, repair: 'webhook_resignalled' }, 'scan: signalled a webhook stuck pending_signal');
        }
        return signalled;
      });
    },
  };
}
