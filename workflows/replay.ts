import {
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import {
  JobStateKey,
  JobTypeKey,
  replayAddSignal,
  replayPauseSignal,
  replayProgressQuery,
  replayResumeSignal,
  replayStopSignal,
  TenantIdKey,
  type ReplayProgress,
} from '../contract/messages.js';
import { BOOKKEEPING_OPTIONS } from './activity-options.js';
import type { JobOutcome } from './lifecycle.js';
import { ReplayState, type ReplayArgs } from './replay-state.js';

export type { ReplayArgs } from './replay-state.js';

// Bookkeeping in Postgres: idempotent, so retried until Postgres is back.
const admin = proxyActivities<SystemActivities>(BOOKKEEPING_OPTIONS);

/**
 * One replay request: replays dead letters in small batches, with bounded concurrency and
 * a rate limit, each as a NEW job `<jobId>-replay-<n>` (a child workflow that outlives this
 * one if need be). Signals add dead letters, pause, resume and stop; the query shows
 * progress. It halts by itself when more than `maxFailures` replays fail again.
 */
export async function replayDeadLetters(a: ReplayArgs): Promise<ReplayProgress> {
  const s = new ReplayState(a);
  setHandler(replayAddSignal, ({ ids }) => s.add(ids));
  setHandler(replayPauseSignal, () => {
    s.paused = true;
  });
  setHandler(replayResumeSignal, () => {
    s.paused = false;
  });
  setHandler(replayStopSignal, ({ reason, by }) => s.stop(reason ?? `stopped by ${by ?? 'an operator'}`));
  setHandler(replayProgressQuery, () => s.progress());

  try {
    await runBatches(a, s);
  } catch (err) {
    if (!isCancellation(err)) throw err;
    s.stop('replay workflow cancelled');
  }
  // Stopping drains: replays already started finish and record their outcome.
  await CancellationScope.nonCancellable(() => condition(() => s.n.running === 0));
  s.done = true;
  return s.progress();
}

async function runBatches(a: ReplayArgs, s: ReplayState): Promise<void> {
  for (;;) {
    await condition(() => s.stopping() || !s.paused);
    if (s.stopping()) return;
    if (s.queue.length === 0) {
      if (!a.keepOpenSeconds || !(await condition(() => s.queue.length > 0 || s.stopping(), a.keepOpenSeconds * 1000))) return;
      continue;
    }
    const batch = s.queue.splice(0, s.opts.batchSize);
    s.n.batches++;
    s.n.waiting = batch.length; // taken from the queue, not started yet: still pending
    const runs: Promise<void>[] = [];
    for (let i = 0; i < batch.length; i++) {
      if (!(await s.gate())) {
        s.queue.unshift(...batch.slice(i)); // never started: still pending
        s.n.waiting = 0;
        break;
      }
      s.n.waiting--;
      s.n.running++;
      s.n.peak = Math.max(s.n.peak, s.n.running);
      // A started replay always reports its outcome, even if this workflow is cancelled.
      runs.push(CancellationScope.nonCancellable(() => replayOne(a, s, batch[i]!)));
    }
    await Promise.all(runs);
    if (workflowInfo().continueAsNewSuggested && !s.stopping()) {
      await continueAsNew<typeof replayDeadLetters>({ ...a, deadLetterIds: [], carried: s.carried() });
    }
  }
}

async function replayOne(a: ReplayArgs, s: ReplayState, id: string): Promise<void> {
  const item = s.items.get(id) ?? { deadLetterId: id, status: 'pending' };
  item.status = 'running';
  item.startedAt = new Date().toISOString();
  try {
    const prep = await admin.prepareReplay({ deadLetterId: id, replayId: a.replayId, actor: a.requestedBy });
    if (prep.kind === 'skip') {
      Object.assign(item, { status: 'skipped', detail: prep.reason });
      s.finished('skipped');
      return;
    }
    item.replayJobId = prep.replayJobId;
    let outcome: 'succeeded' | 'failed' = 'failed';
    let error: string | undefined;
    try {
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
      outcome = r.state === 'succeeded' ? 'succeeded' : 'failed';
    } catch (err) {
      const e = err as { cause?: { message?: string }; message?: string };
      error = e.cause?.message ?? e.message ?? String(err);
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
