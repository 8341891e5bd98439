/**
 * A token bucket for workflow code: `burst` tokens at most, refilled continuously at
 * `ratePerMinute`. Pure (the caller passes the time: `Date.now()` in a workflow is the
 * deterministic workflow-task time), so it is carried across continue-as-new as two numbers
 * and unit-testable. In any window of t ms it grants at most `burst + t * rate / 60000` tokens.
 *
 * Server timers are coarse (about a second on the dev server), so strict spacing would cap a
 * rate near 60/min; a bucket of one second's worth keeps the rate exact on average and bounds
 * any burst (the dead-letter replay's reasoning, workflows/replay-state.ts).
 */
export class TokenBucket {
  readonly burst: number;
  private readonly perMs: number;
  tokens: number;
  refilledAt: number;

  constructor(ratePerMinute: number, now: number, carried?: { tokens: number; refilledAt: number }) {
    this.burst = Math.max(1, Math.floor(ratePerMinute / 60));
    this.perMs = ratePerMinute / 60_000;
    this.tokens = carried?.tokens ?? this.burst;
    this.refilledAt = carried?.refilledAt ?? now;
  }

  /** Takes up to `max` whole tokens now; returns how many (0: none available yet). */
  take(max: number, now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + Math.max(0, now - this.refilledAt) * this.perMs);
    this.refilledAt = now;
    const n = Math.min(max, Math.floor(this.tokens));
    this.tokens -= n;
    return n;
  }

  /** Milliseconds until one whole token is available (at least 1). */
  waitMs(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perMs));
  }

  carried(): { tokens: number; refilledAt: number } {
    return { tokens: this.tokens, refilledAt: this.refilledAt };
  }
}
