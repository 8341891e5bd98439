import { CancellationScope, condition, continueAsNew, isCancellation, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  replayAddSignal,
  replayPauseSignal,
  replayProgressQuery,
  replayResumeSignal,
  replayStopSignal,
  type ReplayProgress,
} from '../contract/messages.js';
import { replayOne, replayOneFast } from './replay-one.js';
import { ReplayState, type ReplayArgs } from './replay-state.js';
import { autoUpgrade } from './versioning.js';

export type { ReplayArgs } from './replay-state.js';

/**
 * Decided once, before the first command: a run started by older code (no marker in its
 * history) keeps replaying the original shape; every new run, and every run after a
 * continue-as-new, takes the fast path (local prepare and finish, slot freed at the child's end).
 */
const FAST_PATH_PATCH = 'replay-fast-path';
/**
 * Decided once, like the fast path: a batch no longer waits for the previous one to finish;
 * its replays start as slots free, so the cap stays busy across batch boundaries (older runs
 * kept a barrier after each batch, which left slots idle while a batch's last replays ran).
 */
const NO_BARRIER_PATCH = 'replay-no-batch-barrier';
/**
 * Decided once, like the fast path: the rate's token bucket starts full (`burst` starts at
 * once), as a token bucket does. Older runs started it with one token, so their second replay
 * waited on a timer the dev server fires after about a second, with the cap's other slots idle.
 */
const FULL_BUCKET_PATCH = 'replay-bucket-starts-full';

/**
 * One replay request: replays dead letters in small batches, with bounded concurrency and
 * a rate limit, each as a NEW job `<jobId>-replay-<n>` (a child workflow that outlives this
 * one if need be). Signals add dead letters, pause, resume and stop; the query shows
 * progress. It halts by itself when more than `maxFailures` replays fail again.
 */
export async function replayDeadLetters(a: ReplayArgs): Promise<ReplayProgress> {
  const one = patched(FAST_PATH_PATCH) ? replayOneFast : replayOne;
  const barrier = !patched(NO_BARRIER_PATCH);
  const s = new ReplayState(a, { fullBucket: patched(FULL_BUCKET_PATCH) });
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
    await runBatches(a, s, one, barrier);
  } catch (err) {
    if (!isCancellation(err)) throw err;
    s.stop('replay workflow cancelled');
  }
  // Stopping drains: replays already started finish and record their outcome.
  await CancellationScope.nonCancellable(() => condition(() => s.n.running === 0 && s.n.finishing === 0));
  s.done = true;
  return s.progress();
}

async function runBatches(a: ReplayArgs, s: ReplayState, one: typeof replayOne, barrier: boolean): Promise<void> {
  // Without the barrier: the replays started and not yet finished, and the first error one threw
  // (a replay records its own outcome and does not throw; an error here is a bug, and fails the
  // workflow as `Promise.all` did).
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  const drain = async () => {
    while (inFlight.size > 0) await Promise.all(inFlight);
    if (failure) throw failure.err;
  };
  for (;;) {
    if (failure) throw failure.err;
    await condition(() => s.stopping() || !s.paused);
    if (s.stopping()) return;
    if (s.queue.length === 0) {
      if (!a.keepOpenSeconds || !(await condition(() => s.queue.length > 0 || s.stopping(), a.keepOpenSeconds * 1000))) return drain();
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
      const run = CancellationScope.nonCancellable(() => one(a, s, batch[i]!));
      if (barrier) runs.push(run);
      else {
        inFlight.add(run);
        run.then(
          () => inFlight.delete(run),
          (err: unknown) => {
            inFlight.delete(run);
            failure ??= { err };
          },
        );
      }
    }
    await Promise.all(runs);
    if (workflowInfo().continueAsNewSuggested && !s.stopping()) {
      // The new run starts with nothing in flight: the replays it would not know of finish here first.
      await drain();
      await continueAsNew<typeof replayDeadLetters>({ ...a, deadLetterIds: [], carried: s.carried() });
    }
  }
}

// Auto-upgrade under Worker Versioning (workers/versioning.ts): a replay request is long-lived
// (`keepOpenSeconds`, pauses, continue-as-new across thousands of dead letters), and the point of
// replaying after a fix is to run the fixed build: it moves to the current build at its next
// workflow task, so its replays start there. Its changes therefore keep the `patched()` markers above.
autoUpgrade(replayDeadLetters);
