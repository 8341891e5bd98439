import { condition } from '@temporalio/workflow';
import type { BulkArgs, BulkCarried, BulkItemResult, BulkOptions, BulkProgress } from '../contract/bulk-actions.js';
import { TokenBucket } from './token-bucket.js';

/**
 * The state of one bulk action: its queue, counts, the pause and stop flags, and the token
 * bucket that spaces the items (the dead-letter replay's shape, workflows/replay-state.ts, with
 * the bucket shared: workflows/token-bucket.ts). Carried across continue-as-new by `carried()`.
 */
export class BulkActionState {
  readonly opts: BulkOptions;
  readonly queue: string[];
  readonly n: { applied: number; skipped: number; failed: number; running: number; inBatches: number; peak: number; batches: number };
  paused: boolean;
  stopRequested = false;
  done = false;
  stopReason: string | undefined;
  private readonly bucket: TokenBucket;

  constructor(private readonly a: BulkArgs) {
    const ratePerMinute = a.ratePerMinute ?? 600;
    // A new request's bucket starts full: `burst` items go at once, as a token bucket does.
    this.bucket = new TokenBucket(ratePerMinute, a.carried?.bucket, (burst) => burst);
    this.opts = { batchSize: a.batchSize ?? 25, concurrency: a.concurrency ?? 2, ratePerMinute, burst: this.bucket.burst };
    const c: BulkCarried | undefined = a.carried;
    this.queue = c ? [...c.queue] : [...new Set(a.targets)];
    this.n = {
      applied: c?.applied ?? 0,
      skipped: c?.skipped ?? 0,
      failed: c?.failed ?? 0,
      running: 0,
      inBatches: 0,
      peak: c?.peak ?? 0,
      batches: c?.batches ?? 0,
    };
    this.paused = c?.paused ?? false;
    this.stopReason = c?.stopReason;
  }

  stopping(): boolean {
    return this.stopRequested;
  }

  stop(reason: string): void {
    this.stopRequested = true;
    this.stopReason ??= reason;
  }

  /**
   * Waits until a batch may start: not paused, a free slot, and at least one token; takes up to
   * `batchSize` tokens (never more than the queue holds). 0: stopping.
   */
  async gate(): Promise<number> {
    for (;;) {
      await condition(() => this.stopping() || (!this.paused && this.n.running < this.opts.concurrency));
      if (this.stopping()) return 0;
      // As many tokens as the batch may hold and the bucket has; none: wait for the next one.
      const want = Math.min(this.opts.batchSize, this.queue.length);
      let n = 0;
      let waitMs = 0;
      while (n < want && (waitMs = this.bucket.take()) === 0) n++;
      if (n > 0) return n;
      await condition(() => this.stopping(), waitMs);
    }
  }

  finished(results: BulkItemResult[]): void {
    for (const r of results) this.n[r.outcome]++;
  }

  progress(): BulkProgress {
    const { n } = this;
    const state = this.done
      ? this.stopRequested
        ? 'stopped'
        : 'completed'
      : this.stopping()
        ? 'stopping'
        : this.paused
          ? 'paused'
          : 'running';
    return {
      bulkId: this.a.bulkId,
      action: this.a.action,
      state,
      requestedBy: this.a.requestedBy,
      options: this.opts,
      counts: {
        total: this.queue.length + n.inBatches + n.applied + n.skipped + n.failed,
        pending: this.queue.length,
        running: n.inBatches,
        applied: n.applied,
        skipped: n.skipped,
        failed: n.failed,
      },
      peakRunning: n.peak,
      batchesStarted: n.batches,
      ...(this.stopReason ? { stopReason: this.stopReason } : {}),
    };
  }

  carried(): BulkCarried {
    const { n } = this;
    return {
      queue: this.queue,
      applied: n.applied,
      skipped: n.skipped,
      failed: n.failed,
      batches: n.batches,
      peak: n.peak,
      paused: this.paused,
      bucket: this.bucket.state(),
      ...(this.stopReason ? { stopReason: this.stopReason } : {}),
    };
  }
}
