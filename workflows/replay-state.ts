import { condition } from '@temporalio/workflow';
import type { Carried, ReplayArgs, ReplayItem, ReplayProgress } from '../contract/messages.js';

export type { ReplayArgs } from '../contract/messages.js';

/** Items kept for the progress query; counts stay exact beyond it. */
const MAX_ITEMS = 1_000;

/**
 * The state of one replay request: its queue, per-item progress, counts, the pause and stop
 * flags, and the token bucket that spaces the starts. Created by the workflow (the shape of the
 * samples' cluster manager), carried across continue-as-new by `carried()`.
 */
export class ReplayState {
  readonly opts: ReplayProgress['options'];
  readonly queue: string[];
  readonly items: Map<string, ReplayItem>;
  /** `running`: replays holding a concurrency slot; `finishing`: replays whose job ended (counted), their outcome being recorded. */
  readonly n: {
    succeeded: number;
    failed: number;
    skipped: number;
    running: number;
    finishing: number;
    waiting: number;
    peak: number;
    batches: number;
  };
  paused: boolean;
  stopRequested = false;
  halted = false;
  done = false;
  stopReason: string | undefined;
  private tokens: number;
  private refilledAt: number;
  private readonly perMs: number;

  /** `fullBucket`: a new request's bucket holds `burst` tokens (older runs: one; workflows/replay.ts). */
  constructor(
    private readonly a: ReplayArgs,
    o: { fullBucket: boolean } = { fullBucket: false },
  ) {
    this.opts = {
      batchSize: a.batchSize ?? 10,
      concurrency: a.concurrency ?? 3,
      ratePerMinute: a.ratePerMinute ?? 60,
      burst: 1,
      maxFailures: a.maxFailures ?? 5,
    };
    // Server timers are coarse (about a second on the dev server), so strict spacing would
    // cap the rate near 60/min. A bucket of one second's worth keeps the rate exact on average
    // and bounds any burst: in any window of t ms, at most burst + t * rate / 60000 starts.
    this.opts.burst = Math.max(1, Math.floor(this.opts.ratePerMinute / 60));
    this.perMs = this.opts.ratePerMinute / 60_000;
    const c = a.carried;
    this.queue = c ? [...c.queue] : [];
    this.items = new Map<string, ReplayItem>((c?.items ?? []).map((i) => [i.deadLetterId, i]));
    this.n = {
      succeeded: c?.succeeded ?? 0,
      failed: c?.failed ?? 0,
      skipped: c?.skipped ?? 0,
      running: 0,
      finishing: 0,
      waiting: 0,
      peak: c?.peakRunning ?? 0,
      batches: c?.batchesStarted ?? 0,
    };
    this.paused = c?.paused ?? false;
    this.tokens = c?.tokens ?? (o.fullBucket ? this.opts.burst : 1);
    this.refilledAt = c?.refilledAt ?? Date.now();
    if (!c) this.add(a.deadLetterIds);
  }

  add(ids: string[]): void {
    for (const id of ids) {
      if (this.items.has(id) || this.queue.includes(id)) continue;
      this.queue.push(id);
      if (this.items.size < MAX_ITEMS) this.items.set(id, { deadLetterId: id, status: 'pending' });
    }
  }

  stopping(): boolean {
    return this.stopRequested || this.halted;
  }

  stop(reason: string): void {
    this.stopRequested = true;
    this.stopReason ??= reason;
  }

  /** Counts one finished replay; more than `maxFailures` failed again halts the request. */
  finished(outcome: 'succeeded' | 'failed' | 'skipped'): void {
    this.n[outcome]++;
    if (this.n.failed > this.opts.maxFailures && !this.halted) {
      this.halted = true;
      this.stopReason ??= `stop condition: ${this.n.failed} replays failed again (more than ${this.opts.maxFailures})`;
    }
  }

  /** Waits until a replay may start: not paused, a free slot, and the rate allows it. False: stopping. */
  async gate(): Promise<boolean> {
    for (;;) {
      await condition(() => this.stopping() || (!this.paused && this.n.running < this.opts.concurrency));
      if (this.stopping()) return false;
      this.refill();
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return true;
      }
      await condition(() => this.stopping(), Math.ceil((1 - this.tokens) / this.perMs));
    }
  }

  private refill(): void {
    const now = Date.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + (now - this.refilledAt) * this.perMs);
    this.refilledAt = now;
  }

  progress(): ReplayProgress {
    const { n } = this;
    const state = this.done
      ? this.halted
        ? 'halted'
        : this.stopRequested
          ? 'stopped'
          : 'completed'
      : this.stopping()
        ? 'stopping'
        : this.paused
          ? 'paused'
          : 'running';
    return {
      replayId: this.a.replayId,
      state,
      requestedBy: this.a.requestedBy,
      options: this.opts,
      counts: {
        total: this.queue.length + n.waiting + n.running + n.succeeded + n.failed + n.skipped,
        pending: this.queue.length + n.waiting,
        running: n.running,
        succeeded: n.succeeded,
        failed: n.failed,
        skipped: n.skipped,
      },
      peakRunning: n.peak,
      batchesStarted: n.batches,
      ...(this.stopReason ? { stopReason: this.stopReason } : {}),
      items: [...this.items.values()],
    };
  }

  carried(): Carried {
    const { n } = this;
    return {
      queue: this.queue,
      items: [...this.items.values()].slice(-MAX_ITEMS),
      succeeded: n.succeeded,
      failed: n.failed,
      skipped: n.skipped,
      peakRunning: n.peak,
      batchesStarted: n.batches,
      paused: this.paused,
      tokens: this.tokens,
      refilledAt: this.refilledAt,
    };
  }
}
