import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TokenBucket } from '../../workflows/token-bucket.js';

describe('TokenBucket (the replay pacing, in workflow time)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
  });
  afterEach(() => vi.useRealTimers());

  it('holds one second of the rate, at least one token', () => {
    expect(new TokenBucket(600, undefined, (b) => b).burst).toBe(10);
    expect(new TokenBucket(30, undefined, (b) => b).burst).toBe(1);
  });

  it('takes at most burst + elapsed x rate in any window', () => {
    const bucket = new TokenBucket(120, undefined, (b) => b); // 2/s, burst 2
    let taken = 0;
    for (let ms = 0; ms <= 10_000; ms += 50) {
      vi.setSystemTime(new Date(Date.UTC(2026, 0, 1) + ms));
      while (bucket.take() === 0) taken++;
    }
    // The full bucket, then 2 per second for 10 s: never more; the last may still be filling.
    expect(taken).toBeLessThanOrEqual(2 + 20);
    expect(taken).toBeGreaterThanOrEqual(2 + 20 - 1);
  });

  it('says how long until the next token', () => {
    const bucket = new TokenBucket(60, undefined, () => 1); // 1/s
    expect(bucket.take()).toBe(0);
    expect(bucket.take()).toBe(1_000);
    vi.advanceTimersByTime(400);
    expect(bucket.take()).toBe(600);
  });

  it('carries its state across continue-as-new', () => {
    const a = new TokenBucket(60, undefined, () => 1);
    a.take();
    const carried = a.state();
    expect(carried.tokens).toBe(0);
    const b = new TokenBucket(60, carried, () => 1);
    expect(b.take()).toBe(1_000); // the carried empty bucket, not a fresh one
  });
});
