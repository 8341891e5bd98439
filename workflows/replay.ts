import {
  CancellationScope, condition, continueAsNew, isCancellation, ParentClosePolicy, proxyActivities, setHandler,
  startChild, workflowInfo,
} from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import { BOOKKEEPING_OPTIONS } from './activity-options.js';
import type { JobOutcome } from './lifecycle.js';
import {
  JobStateKey, JobTypeKey, replayAddSignal, replayPauseSignal, replayProgressQuery, replayResumeSignal, replayStopSignal,
  TenantIdKey, type ReplayItem, type ReplayProgress,
} from '../contract/messages.js';

/** What a replay request asks for. TSDoc states each default (the HTTP API applies them). */
export interface ReplayArgs {
  replayId: string;
  /** Operator named in every action the replay records. */
  requestedBy: string;
  deadLetterIds: string[];
  /** Dead letters per batch; a batch ends when all its replays have finished. Default 10. */
  batchSize?: number;
  /** Replays running at once. Default 3. */
  concurrency?: number;
  /** Replay starts per minute: a token bucket refilled continuously, holding one second's worth. Default 60. */
  ratePerMinute?: number;
  /** Stop condition: halt when more than this many replays fail again. Default 5. */
  maxFailures?: number;
  /** Stay open this long for more `replayAdd` signals once the queue is empty. Default 0. */
  keepOpenSeconds?: number;
  /** State carried over continue-as-new (long replays keep their history small). */
  carried?: Carried;
}

interface Carried {
  queue: string[]; items: ReplayItem[]; succeeded: number; failed: number; skipped: number;
  peakRunning: number; batchesStarted: number; paused: boolean; tokens: number; refilledAt: number;
}

// Bookkeeping in Postgres: idempotent, so retried until Postgres is back.
const admin = proxyActivities<SystemActivities>(BOOKKEEPING_OPTIONS);

/** Items kept for the progress query; counts stay exact beyond it. */
const MAX_ITEMS = 1_000;

/**
 * One replay request: replays dead letters in small batches, with bounded concurrency and
 * a rate limit, each as a NEW job `<jobId>-replay-<n>` (a child workflow that outlives this
 * one if need be). Signals add dead letters, pause, resume and stop; the query shows
 * progress. It halts by itself when more than `maxFailures` replays fail again.
 */
export async function replayDeadLetters(a: ReplayArgs): Promise<ReplayProgress> {
  const opts = {
    batchSize: a.batchSize ?? 10, concurrency: a.concurrency ?? 3,
    ratePerMinute: a.ratePerMinute ?? 60, burst: 1, maxFailures: a.maxFailures ?? 5,
  };
  // Server timers are coarse (about a second on the dev server), so strict spacing would
  // cap the rate near 60/min. A bucket of one second's worth keeps the rate exact on average
  // and bounds any burst: in any window of t ms, at most burst + t * rate / 60000 starts.
  opts.burst = Math.max(1, Math.floor(opts.ratePerMinute / 60));
  const perMs = opts.ratePerMinute / 60_000;
  const c = a.carried;
  const queue: string[] = c ? [...c.queue] : [];
  const items = new Map<string, ReplayItem>((c?.items ?? []).map((i) => [i.deadLetterId, i]));
  const n = { succeeded: c?.succeeded ?? 0, failed: c?.failed ?? 0, skipped: c?.skipped ?? 0, running: 0, waiting: 0, peak: c?.peakRunning ?? 0, batches: c?.batchesStarted ?? 0 };
  let paused = c?.paused ?? false;
  let stopRequested = false;
  let halted = false;
  let stopReason: string | undefined;
  let tokens = c?.tokens ?? 1;
  let refilledAt = c?.refilledAt ?? Date.now();
  const refill = () => {
    const now = Date.now();
    tokens = Math.min(opts.burst, tokens + (now - refilledAt) * perMs);
    refilledAt = now;
  };
  let done = false;

  const add = (ids: string[]) => {
    for (const id of ids) {
      if (items.has(id) || queue.includes(id)) continue;
      queue.push(id);
      if (items.size < MAX_ITEMS) items.set(id, { deadLetterId: id, status: 'pending' });
    }
  };
  if (!c) add(a.deadLetterIds);
  const stopping = () => stopRequested || halted;

  const progress = (): ReplayProgress => ({
    replayId: a.replayId,
    state: done ? (halted ? 'halted' : stopRequested ? 'stopped' : 'completed') : stopping() ? 'stopping' : paused ? 'paused' : 'running',
    requestedBy: a.requestedBy, options: opts,
    counts: { total: queue.length + n.waiting + n.running + n.succeeded + n.failed + n.skipped, pending: queue.length + n.waiting, running: n.running, succeeded: n.succeeded, failed: n.failed, skipped: n.skipped },
    peakRunning: n.peak, batchesStarted: n.batches, ...(stopReason ? { stopReason } : {}), items: [...items.values()],
  });
  setHandler(replayAddSignal, ({ ids }) => add(ids));
  setHandler(replayPauseSignal, () => { paused = true; });
  setHandler(replayResumeSignal, () => { paused = false; });
  setHandler(replayStopSignal, ({ reason, by }) => { stopRequested = true; stopReason ??= reason ?? `stopped by ${by ?? 'an operator'}`; });
  setHandler(replayProgressQuery, progress);

  /** Waits until a replay may start: not paused, a free slot, and the rate allows it. */
  async function gate(): Promise<boolean> {
    for (;;) {
      await condition(() => stopping() || (!paused && n.running < opts.concurrency));
      if (stopping()) return false;
      refill();
      if (tokens >= 1) {
        tokens -= 1;
        return true;
      }
      await condition(stopping, Math.ceil((1 - tokens) / perMs));
    }
  }

  async function replayOne(id: string): Promise<void> {
    const item = items.get(id) ?? { deadLetterId: id, status: 'pending' };
    item.status = 'running';
    item.startedAt = new Date().toISOString();
    try {
      const prep = await admin.prepareReplay({ deadLetterId: id, replayId: a.replayId, actor: a.requestedBy });
      if (prep.kind === 'skip') {
        Object.assign(item, { status: 'skipped', detail: prep.reason });
        n.skipped++;
        return;
      }
      item.replayJobId = prep.replayJobId;
      let outcome: 'succeeded' | 'failed' = 'failed';
      let error: string | undefined;
      try {
        const child = await startChild(prep.workflowType, {
          workflowId: prep.replayJobId, args: [prep.args],
          // The replay job is a job of its own: it finishes even if this workflow is stopped or terminated.
          parentClosePolicy: ParentClosePolicy.ABANDON, workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [
            { key: TenantIdKey, value: prep.args.tenantId }, { key: JobTypeKey, value: prep.args.jobType }, { key: JobStateKey, value: 'queued' },
          ],
          staticSummary: `replay of ${prep.args.effectScope} (replay ${a.replayId})`,
        });
        const r = (await child.result()) as JobOutcome;
        outcome = r.state === 'succeeded' ? 'succeeded' : 'failed';
      } catch (err) {
        const e = err as { cause?: { message?: string }; message?: string };
        error = e.cause?.message ?? e.message ?? String(err);
      }
      await admin.finishReplay({ deadLetterId: id, replayId: a.replayId, replayJobId: prep.replayJobId, actor: a.requestedBy, outcome, error });
      Object.assign(item, { status: outcome, ...(error ? { detail: error } : {}) });
      if (outcome === 'succeeded') n.succeeded++;
      else n.failed++;
      if (n.failed > opts.maxFailures && !halted) {
        halted = true;
        stopReason ??= `stop condition: ${n.failed} replays failed again (more than ${opts.maxFailures})`;
      }
    } finally {
      n.running--;
      item.finishedAt = new Date().toISOString();
    }
  }

  async function runBatches(): Promise<void> {
    for (;;) {
      await condition(() => stopping() || !paused);
      if (stopping()) return;
      if (queue.length === 0) {
        if (!a.keepOpenSeconds || !(await condition(() => queue.length > 0 || stopping(), a.keepOpenSeconds * 1000))) return;
        continue;
      }
      const batch = queue.splice(0, opts.batchSize);
      n.batches++;
      n.waiting = batch.length; // taken from the queue, not started yet: still pending
      const runs: Promise<void>[] = [];
      for (let i = 0; i < batch.length; i++) {
        if (!(await gate())) {
          queue.unshift(...batch.slice(i)); // never started: still pending
          n.waiting = 0;
          break;
        }
        n.waiting--;
        n.running++;
        n.peak = Math.max(n.peak, n.running);
        // A started replay always reports its outcome, even if this workflow is cancelled.
        runs.push(CancellationScope.nonCancellable(() => replayOne(batch[i]!)));
      }
      await Promise.all(runs);
      if (workflowInfo().continueAsNewSuggested && !stopping()) {
        await continueAsNew<typeof replayDeadLetters>({ ...a, deadLetterIds: [], carried: {
          queue, items: [...items.values()].slice(-MAX_ITEMS), succeeded: n.succeeded, failed: n.failed, skipped: n.skipped,
          peakRunning: n.peak, batchesStarted: n.batches, paused, tokens, refilledAt,
        } });
      }
    }
  }

  try {
    await runBatches();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    stopRequested = true;
    stopReason ??= 'replay workflow cancelled';
  }
  // Stopping drains: replays already started finish and record their outcome.
  await CancellationScope.nonCancellable(() => condition(() => n.running === 0));
  done = true;
  return progress();
}
