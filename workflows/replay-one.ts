import { ParentClosePolicy, proxyActivities, proxyLocalActivities, startChild } from '@temporalio/workflow';
import type { PreparedReplay } from '../activities/dead-letters.js';
import type { SystemActivities } from '../activities/index.js';
import { JobStateKey, JobTypeKey, TenantIdKey } from '../contract/messages.js';
import { BOOKKEEPING_OPTIONS } from './activity-options.js';
import type { JobOutcome } from './lifecycle.js';
import type { ReplayArgs, ReplayState } from './replay-state.js';

// Bookkeeping in Postgres: idempotent, so retried until Postgres is back.
const admin = proxyActivities<SystemActivities>(BOOKKEEPING_OPTIONS);
// The same steps as local activities (the fast path): no task round trip through the server,
// and the child's start goes out in the workflow task that prepared it. Safe to run twice
// (a local activity is re-run if its workflow task is lost): both are idempotent per request.
const local = proxyLocalActivities<SystemActivities>(BOOKKEEPING_OPTIONS);
// A taken-over replay job may run for as long as any job; the heartbeat is its lease.
const waiter = proxyActivities<SystemActivities>({ startToCloseTimeout: '7d', heartbeatTimeout: '30s' });

async function runChild(a: ReplayArgs, prep: PreparedReplay): Promise<'succeeded' | 'failed'> {
  const child = await startChild(prep.workflowType, {
    workflowId: prep.replayJobId,
    args: [prep.args],
    // The replay job is a job of its own: it finishes even if this workflow is stopped or terminated.
    parentClosePolicy: ParentClosePolicy.ABANDON,
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: TenantIdKey, value: prep.args.tenantId },
      { key: JobTypeKey, value: prep.args.jobType },
      { key: JobStateKey, value: 'queued' },
    ],
    staticSummary: `replay of ${prep.args.effectScope} (replay ${a.replayId})`,
  });
  const r = (await child.result()) as JobOutcome;
  return r.state === 'succeeded' ? 'succeeded' : 'failed';
}

function errorText(err: unknown): string {
  const e = err as { cause?: { message?: string }; message?: string };
  return e.cause?.message ?? e.message ?? String(err);
}

/**
 * One replay, the original shape (workflows started before the `replay-fast-path` patch):
 * prepare and finish as activities, the slot held until the finish is recorded.
 */
export async function replayOne(a: ReplayArgs, s: ReplayState, id: string): Promise<void> {
  const item = s.items.get(id) ?? { deadLetterId: id, status: 'pending' };
  item.status = 'running';
  item.startedAt = new Date().toISOString();
  try {
    const prep = await admin.prepareReplay({ deadLetterId: id, replayId: a.replayId, actor: a.requestedBy });
    if (prep.kind === 'skip') {
      Object.assign(item, { status: 'skipped', detail: prep.reason, ...(prep.replayJobId ? { replayJobId: prep.replayJobId } : {}) });
      s.finished('skipped');
      return;
    }
    item.replayJobId = prep.replayJobId;
    let outcome: 'succeeded' | 'failed' = 'failed';
    let error: string | undefined;
    try {
      outcome = await runChild(a, prep);
    } catch (err) {
      error = errorText(err);
    }
    await admin.finishReplay({
      deadLetterId: id,
      replayId: a.replayId,
      replayJobId: prep.replayJobId,
      actor: a.requestedBy,
      outcome,
      error,
    });
    Object.assign(item, { status: outcome, ...(error ? { detail: error } : {}) });
    s.finished(outcome);
  } finally {
    s.n.running--;
    item.finishedAt = new Date().toISOString();
  }
}

/**
 * One replay, the fast path: prepare and finish as local activities, and the slot freed as
 * soon as the replay job has ended (its upstream calls are over), so the next replay starts
 * while this one's outcome is recorded; the drain and continue-as-new still wait for that
 * (`s.n.finishing`). A dead letter taken over from a closed request keeps its replay job:
 * started if that request never started it, else awaited.
 */
export async function replayOneFast(a: ReplayArgs, s: ReplayState, id: string): Promise<void> {
  const item = s.items.get(id) ?? { deadLetterId: id, status: 'pending' };
  item.status = 'running';
  item.startedAt = new Date().toISOString();
  let holding = true;
  const release = () => {
    if (holding) s.n.running--;
    holding = false;
  };
  try {
    const takeOverFrom = a.takeOver?.[id];
    const prep = await local.prepareReplay({ deadLetterId: id, replayId: a.replayId, actor: a.requestedBy, takeOver: true, takeOverFrom });
    if (prep.kind === 'skip') {
      Object.assign(item, { status: 'skipped', detail: prep.reason, ...(prep.replayJobId ? { replayJobId: prep.replayJobId } : {}) });
      s.finished('skipped');
      return;
    }
    item.replayJobId = prep.replayJobId;
    if (prep.takenOver) item.takenOver = true;
    let outcome: 'succeeded' | 'failed' = 'failed';
    let error: string | undefined;
    try {
      outcome = await runChild(a, prep);
    } catch (err) {
      // The SDK rejects startChild with WorkflowExecutionAlreadyStartedError (not re-exported by @temporalio/workflow).
      if (prep.takenOver && err instanceof Error && err.name === 'WorkflowExecutionAlreadyStartedError') {
        outcome = await waiter.awaitReplayJob({ replayJobId: prep.replayJobId });
      } else error = errorText(err);
    }
    // Counted before the slot is freed, so the stop condition (maxFailures) holds before another replay can start.
    Object.assign(item, { status: outcome, ...(error ? { detail: error } : {}) });
    s.finished(outcome);
    release();
    s.n.finishing++;
    try {
      const r = { deadLetterId: id, replayId: a.replayId, replayJobId: prep.replayJobId, actor: a.requestedBy, outcome, error };
      await local.finishReplay(r);
    } finally {
      s.n.finishing--;
    }
  } finally {
    release();
    item.finishedAt = new Date().toISOString();
  }
}
