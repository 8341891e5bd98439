// A token bucket in workflow time (`Date.now()` is the workflow task's clock, so it replays
// deterministically): spaces the starts of a replay, or of any batch a workflow paces.

/** What a bucket carries across continue-as-new. */
export interface BucketState {
  tokens: number;
  refilledAt: number;
}

export class TokenBucket {
  /** Tokens the bucket holds at most: one second's worth of the rate, at least one. */
  readonly burst: number;
  private readonly perMs: number;
  private tokens: number;
  private refilledAt: number;

  /**
   * Server timers are coarse (about a second on the dev server), so strict spacing would cap
   * the rate near 60/min. A bucket of one second's worth keeps the rate exact on average and
   * bounds any burst: in any window of t ms, at most burst + t * rate / 60000 takes.
   * `carried`: the state a previous run handed over; otherwise it starts with `initialTokens`.
   */
  constructor(ratePerMinute: number, carried: Partial<BucketState> | undefined, initialTokens: (burst: number) => number) {
    this.burst = Math.max(1, Math.floor(ratePerMinute / 60));
    this.perMs = ratePerMinute / 60_000;
    this.tokens = carried?.tokens ?? initialTokens(this.burst);
    this.refilledAt = carried?.refilledAt ?? Date.now();
  }

  /** Takes a token when one is there (0); otherwise the milliseconds until one will be. */
  take(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.refilledAt) * this.perMs);
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.tokens) / this.perMs);
  }

  state(): BucketState {
    return { tokens: this.tokens, refilledAt: this.refilledAt };
  }
}
