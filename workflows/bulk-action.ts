import {
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { autoUpgrade } from './versioning.js';
import type { SystemActivities } from '../activities/index.js';
import {
  bulkPauseSignal,
  bulkProgressQuery,
  bulkResumeSignal,
  bulkStopSignal,
  type BulkArgs,
  type BulkItemResult,
  type BulkProgress,
} from '../contract/bulk-actions.js';
import { BOOKKEEPING_OPTIONS } from './activity-options.js';
import { BulkActionState } from './bulk-action-state.js';

// Each batch acts and records its audit rows in Postgres: idempotent per item, so retried
// until Postgres and Temporal take it (a batch of 25 Temporal calls fits well in a minute).
const act = proxyActivities<SystemActivities>({ ...BOOKKEEPING_OPTIONS, startToCloseTimeout: '2m', heartbeatTimeout: '30s' });

/**
 * One bulk action (cancel, rerun, discard, retry-now) over targets the service resolved and
 * previewed: batches taken from a token bucket (the rate), at most `concurrency` running, an
 * audit row per item under the operator's name (written by the batch's activity). Signals
 * pause, resume and stop it; the query shows progress; the `bulk_actions` row keeps the counts
 * for when it is over. Stopping drains: batches already started finish and record their items.
 */
export async function bulkAction(a: BulkArgs): Promise<BulkProgress> {
  const s = new BulkActionState(a);
  const record = (finished: boolean) => {
    const p = s.progress();
    return act.recordBulkState({ bulkId: a.bulkId, state: p.state, ...(p.stopReason ? { stopReason: p.stopReason } : {}), finished });
  };
  setHandler(bulkPauseSignal, () => {
    s.paused = true;
  });
  setHandler(bulkResumeSignal, () => {
    s.paused = false;
  });
  setHandler(bulkStopSignal, ({ reason, by }) => s.stop(reason ?? `stopped by ${by ?? 'an operator'}`));
  setHandler(bulkProgressQuery, () => s.progress());

  try {
    await run(a, s);
  } catch (err) {
    if (!isCancellation(err)) throw err;
    s.stop('bulk action workflow cancelled');
  }
  await CancellationScope.nonCancellable(async () => {
    await condition(() => s.n.running === 0);
    s.done = true;
    await record(true);
  });
  return s.progress();
}

async function run(a: BulkArgs, s: BulkActionState): Promise<void> {
  // The first error a batch threw (a batch records its items and retries; an error here is a bug,
  // and fails the workflow, as the replay's batches do).
  let failure: { err: unknown } | undefined;
  const rethrow = () => {
    if (failure) throw failure.err;
  };
  for (;;) {
    rethrow();
    if (s.queue.length === 0) break;
    const n = await s.gate();
    if (n === 0) break; // stopping
    const targets = s.queue.splice(0, n);
    s.n.batches++;
    s.n.running++;
    s.n.inBatches += targets.length;
    s.n.peak = Math.max(s.n.peak, s.n.running);
    const grantedAt = new Date().toISOString();
    // A started batch always finishes and records its items, even if this workflow is cancelled.
    void CancellationScope.nonCancellable(() =>
      act.applyBulkItems({
        bulkId: a.bulkId,
        action: a.action,
        actor: a.requestedBy,
        targets,
        grantedAt,
        ...(a.reason ? { reason: a.reason } : {}),
        ...(a.fromStep ? { fromStep: a.fromStep } : {}),
      }),
    ).then(
      (results: BulkItemResult[]) => {
        s.finished(results);
        s.n.inBatches -= targets.length;
        s.n.running--;
      },
      (err: unknown) => {
        failure ??= { err };
        s.n.inBatches -= targets.length;
        s.n.running--;
      },
    );
    if (workflowInfo().continueAsNewSuggested && !s.stopping()) {
      await condition(() => s.n.running === 0);
      rethrow();
      await continueAsNew<typeof bulkAction>({ ...a, targets: [], carried: s.carried() });
    }
  }
  await condition(() => s.n.running === 0);
  rethrow();
}

// Auto-upgrade under Worker Versioning (workers/versioning.ts): a bulk action can stay open for
// hours (paused, pacing thousands of targets), and pinned it would hold its build's workers up
// for as long after a deploy; it moves to the current build at its next workflow task instead,
// so a change to this workflow still needs `patched()`, and the jobs it starts begin on the current build.
autoUpgrade(bulkAction);
