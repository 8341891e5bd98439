import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import type { BulkActionKind, BulkItemResult } from '../contract/bulk-actions.js';
import { isTerminalState } from '../contract/job-types.js';
import { withTransaction } from '../lib/db.js';
import { startPlanned, startRerun } from '../services/reruns.js';
import { findBulkItem, insertBulkItem, refreshBulkAction } from '../store/bulk-actions.js';
import { insertAction, lockDeadLetter, markDiscarded } from '../store/dead-letters.js';
import { getIntent } from '../store/intents.js';
import { withHeartbeat } from './attempt.js';
import type { ActivityDeps } from './deps.js';

export interface BulkBatch {
  bulkId: string;
  action: BulkActionKind;
  actor: string;
  targets: string[];
  /** When the workflow's token bucket let these go (ISO): every audit row of the batch carries it. */
  grantedAt: string;
  reason?: string;
  fromStep?: string;
}

type Outcome = Omit<BulkItemResult, 'targetId'>;

/**
 * Requests the job workflow's cancellation. The workflow cancels its pending activity and
 * records `cancelled` (a delayed job's run is woken at once: services/start-job.ts).
 */
async function cancelJob(client: Client, pool: pg.Pool, jobId: string): Promise<Outcome> {
  const row = await getIntent(pool, jobId);
  if (!row) return { outcome: 'skipped', detail: 'job not found' };
  if (isTerminalState(row.status)) return { outcome: 'skipped', detail: `already ${row.status}` };
  try {
    await client.workflow.getHandle(jobId).cancel();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { outcome: 'skipped', detail: 'no workflow run' };
    throw err;
  }
  return { outcome: 'applied', detail: 'cancellation requested' };
}

/**
 * Ends the back-off of a job waiting to retry. Temporal keeps an activity's retry timer on the
 * server; server 1.29.1 has no "retry now" call, but pausing a workflow activity and unpausing
 * it (attempts kept, no jitter) schedules it at once with its attempt count unchanged, so the
 * job's budget (maximumAttempts, elapsed cap) is not reset. `ResetActivity` would also end the
 * wait, but resets the attempt to 1, which would hand the retry a fresh budget.
 */
async function retryNow(client: Client, pool: pg.Pool, jobId: string, actor: string): Promise<Outcome> {
  const row = await getIntent(pool, jobId);
  if (!row) return { outcome: 'skipped', detail: 'job not found' };
  if (row.status !== 'retrying') return { outcome: 'skipped', detail: `not waiting to retry (${row.status})` };
  let d;
  try {
    d = await client.workflow.getHandle(jobId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { outcome: 'skipped', detail: 'no workflow run' };
    throw err;
  }
  const waiting = (d.raw.pendingActivities ?? []).filter((a) => (a.attempt ?? 1) > 1 && a.nextAttemptScheduleTime);
  if (waiting.length === 0) return { outcome: 'skipped', detail: 'no activity in back-off' };
  const namespace = client.options.namespace;
  const execution = { workflowId: jobId };
  for (const a of waiting) {
    const identity = `bulk retry-now by ${actor}`;
    await client.workflowService.pauseActivity({ namespace, execution, id: a.activityId, identity, reason: identity });
    await client.workflowService.unpauseActivity({
      namespace,
      execution,
      id: a.activityId,
      identity,
      resetAttempts: false,
      resetHeartbeat: false,
    });
  }
  return { outcome: 'applied', detail: `back-off ended for ${waiting.map((a) => a.activityType?.name ?? a.activityId).join(', ')}` };
}

/** Bulk-action activities. Function names are Temporal activity types. */
export function createBulkActionActivities(deps: Pick<ActivityDeps, 'pool' | 'log' | 'jobs' | 'fastPathTypes'>) {
  /**
   * One batch: each target once per request. An item already recorded (a retried activity) is
   * reported as recorded and not acted on again. Cancel and retry-now act in Temporal, then
   * record; discard and rerun write their change and the audit row in one transaction.
   */
  async function applyBulkItems(b: BulkBatch): Promise<BulkItemResult[]> {
    const ctx = Context.current();
    const grantedAt = new Date(b.grantedAt);
    const rerunDeps = {
      pool: deps.pool,
      temporal: ctx.client,
      jobs: deps.jobs,
      taskQueue: ctx.info.taskQueue,
      fastPath: deps.fastPathTypes,
    };
    return withHeartbeat(async () => {
      const results: BulkItemResult[] = [];
      for (const targetId of b.targets) {
        ctx.heartbeat();
        const seen = await findBulkItem(deps.pool, b.bulkId, targetId);
        if (seen) {
          const jobId = typeof seen.detail.jobId === 'string' ? seen.detail.jobId : undefined;
          // A rerun recorded before its start: start it now (idempotent).
          if (b.action === 'rerun' && seen.outcome === 'applied' && jobId) {
            const row = await getIntent(deps.pool, jobId);
            if (row) await startPlanned(rerunDeps, { rerunJobId: jobId, tenantId: row.tenant_id, jobType: row.job_type });
          }
          results.push({ targetId, outcome: seen.outcome, ...(jobId ? { jobId } : {}) });
          continue;
        }
        const r = await applyOne(b, targetId, grantedAt, rerunDeps);
        results.push({ targetId, ...r });
      }
      await refreshBulkAction(deps.pool, b.bulkId, {});
      return results;
    });
  }

  async function applyOne(b: BulkBatch, targetId: string, grantedAt: Date, rerunDeps: Parameters<typeof startRerun>[0]): Promise<Outcome> {
    const record = (o: Outcome, db: pg.Pool | pg.PoolClient = deps.pool) =>
      insertBulkItem(db, {
        bulkId: b.bulkId,
        targetId,
        outcome: o.outcome,
        actor: b.actor,
        grantedAt,
        detail: {
          ...(o.detail ? { detail: o.detail } : {}),
          ...(o.jobId ? { jobId: o.jobId } : {}),
          ...(b.reason ? { reason: b.reason } : {}),
        },
      });
    try {
      if (b.action === 'cancel' || b.action === 'retry-now') {
        const o =
          b.action === 'cancel'
            ? await cancelJob(rerunDeps.temporal, deps.pool, targetId)
            : await retryNow(rerunDeps.temporal, deps.pool, targetId, b.actor);
        await record(o);
        return o;
      }
      if (b.action === 'discard') {
        return await withTransaction(deps.pool, async (tx) => {
          const dl = await lockDeadLetter(tx, targetId);
          const o: Outcome = !dl
            ? { outcome: 'skipped', detail: 'dead letter not found' }
            : dl.state !== 'open'
              ? { outcome: 'skipped', detail: `dead letter is ${dl.state}` }
              : { outcome: 'applied', detail: 'discarded' };
          if (o.outcome === 'applied') {
            const reason = b.reason ?? `bulk discard ${b.bulkId}`;
            await markDiscarded(tx, targetId, reason);
            await insertAction(tx, { deadLetterId: targetId, action: 'discarded', actor: b.actor, details: { reason, bulkId: b.bulkId } });
          }
          await record(o, tx);
          return o;
        });
      }
      // rerun: the new job and the audit row commit together; the start follows.
      let o: Outcome = { outcome: 'applied' };
      const plan = await startRerun(rerunDeps, targetId, {
        ...(b.fromStep ? { fromStep: b.fromStep } : {}),
        inTx: async (tx, p) => {
          o = { outcome: 'applied', jobId: p.rerunJobId, detail: 'rerun started' };
          await record(o, tx);
        },
      });
      deps.log.info({ jobId: targetId, rerunJobId: plan.rerunJobId, bulkId: b.bulkId }, 'job rerun');
      return o;
    } catch (err) {
      // A refusal that can never succeed (a job still running, an unknown step) is this item's
      // outcome; anything else (Postgres or Temporal down) fails the activity, which retries.
      const e = err as { code?: string; message?: string };
      if (e.code === 'state_conflict' || e.code === 'validation' || e.code === 'not_found') {
        const o: Outcome = { outcome: 'skipped', detail: e.message ?? 'refused' };
        await record(o);
        return o;
      }
      throw err;
    }
  }

  /** The workflow ended (or changed state): the row takes its state and final counts. */
  async function recordBulkState(a: { bulkId: string; state: string; stopReason?: string; finished: boolean }): Promise<void> {
    await refreshBulkAction(deps.pool, a.bulkId, { state: a.state, stopReason: a.stopReason ?? null, finished: a.finished });
  }

  return { applyBulkItems, recordBulkState };
}
