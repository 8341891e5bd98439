import { condition } from '@temporalio/workflow';
import type { Carried, ReplayArgs, ReplayItem, ReplayProgress } from '../contract/messages.js';
import { TokenBucket } from './token-bucket.js';

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
  private readonly bucket: TokenBucket;

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
    const c = a.carried;
    this.bucket = new TokenBucket(this.opts.ratePerMinute, c, (burst) => (o.fullBucket ? burst : 1));
    this.opts.burst = this.bucket.burst;
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
      const waitMs = this.bucket.take();
      if (waitMs === 0) return true;
      await condition(() => this.stopping(), waitMs);
    }
  }

  progress(): ReplayProgress {
    const { n } = this;
    return {
      replayId: this.a.replayId,
      state: this.stateName(),
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

  private stateName(): ReplayProgress['state'] {
    if (this.done) return this.halted ? 'halted' : this.stopRequested ? 'stopped' : 'completed';
    return this.stopping() ? 'stopping' : this.paused ? 'paused' : 'running';
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
      ...this.bucket.state(),
    };
  }
}
