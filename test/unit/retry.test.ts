import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET } from '../../contract/job-types.js';
import {
  attemptMarginMs,
  chooseDelay,
  classifyStatus,
  errorClassForStatus,
  exceedsBudget,
  fullJitterMs,
  jitterWindowMs,
  MAX_RETRY_AFTER_MS,
  MIN_JITTER_WINDOW_MS,
  MIN_RETRY_DELAY_MS,
  parseRetryAfter,
} from '../../lib/retry.js';

describe('classification', () => {
  it('retries 429, 408 and 5xx; everything else in 4xx is permanent', () => {
    for (const s of [408, 429, 500, 502, 503, 504]) expect(classifyStatus(s)).toBe('retryable');
    for (const s of [400, 401, 403, 404, 409, 422]) expect(classifyStatus(s)).toBe('non_retryable');
  });
  it('names error classes', () => {
    expect(errorClassForStatus(429)).toBe('rate_limited');
    expect(errorClassForStatus(503)).toBe('upstream_unavailable');
    expect(errorClassForStatus(403)).toBe('permission_denied');
    expect(errorClassForStatus(400)).toBe('invalid_request');
  });
  it('retries a 409 to a keyed request: the key is still in progress upstream', () => {
    expect(classifyStatus(409, { idempotencyKeySent: true })).toBe('retryable');
    expect(errorClassForStatus(409, { idempotencyKeySent: true })).toBe('request_in_progress');
    expect(classifyStatus(409, { idempotencyKeySent: false })).toBe('non_retryable');
    expect(errorClassForStatus(409)).toBe('conflict');
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-29T12:00:00Z');
  it('reads delta seconds', () => {
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
  });
  it('reads an HTTP date', () => {
    expect(parseRetryAfter('Sun, 29 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
  });
  it('floors 0 and a date in the past to a small delay (retry now, not in a tight loop)', () => {
    expect(parseRetryAfter('0', now)).toBe(MIN_RETRY_DELAY_MS);
    expect(parseRetryAfter('Sun, 29 Nov 2026 11:00:00 GMT', now)).toBe(MIN_RETRY_DELAY_MS);
  });
  it('clamps absurd values', () => {
    expect(parseRetryAfter('86400', now)).toBe(MAX_RETRY_AFTER_MS);
  });
  it('ignores garbage, so the caller falls back to jitter', () => {
    for (const v of ['soon', '-5', '1.5', '', 'Sun, 99 Foo 2026 99:99:99 GMT', undefined, null])
      expect(parseRetryAfter(v, now)).toBeUndefined();
    expect(chooseDelay(3, parseRetryAfter('soon', now), { baseMs: 100, capMs: 1000 }, () => 0.5).source).toBe('jitter');
  });
});

describe('full jitter', () => {
  it('stays within [floor, min(cap, max(5 s, base * 2^attempt))] over many draws, and spreads over the range', () => {
    const opts = { baseMs: 500, capMs: 30_000 };
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(opts.capMs, Math.max(MIN_JITTER_WINDOW_MS, opts.baseMs * 2 ** attempt));
      expect(jitterWindowMs(attempt, opts)).toBe(ceiling);
      const draws = Array.from({ length: 2_000 }, () => fullJitterMs(attempt, opts));
      for (const d of draws) {
        expect(d).toBeGreaterThanOrEqual(MIN_RETRY_DELAY_MS);
        expect(d).toBeLessThan(ceiling);
      }
      // Full jitter, not "exponential plus a little": draws cover the whole range.
      expect(Math.max(...draws)).toBeGreaterThan(ceiling * 0.9);
      expect(Math.min(...draws)).toBeLessThan(Math.max(MIN_RETRY_DELAY_MS, ceiling * 0.1) + 1);
    }
  });
  it('never draws past the cap, even when the cap is narrower than the minimum window', () => {
    expect(jitterWindowMs(1, { baseMs: 400, capMs: 4_000 })).toBe(4_000);
    expect(fullJitterMs(1, { baseMs: 400, capMs: 4_000 }, () => 0.999999)).toBeLessThan(4_000);
  });
  it('uses the injected random source at both ends', () => {
    expect(fullJitterMs(3, { baseMs: 1000, capMs: 60_000 }, () => 0)).toBe(MIN_RETRY_DELAY_MS);
    expect(fullJitterMs(3, { baseMs: 1000, capMs: 60_000 }, () => 0.999999)).toBe(7_999);
    expect(fullJitterMs(20, { baseMs: 1000, capMs: 60_000 }, () => 0.999999)).toBe(59_999);
  });
  it('prefers Retry-After over jitter', () => {
    expect(chooseDelay(1, 2_000, { baseMs: 100, capMs: 1000 })).toEqual({ delayMs: 2_000, source: 'retry-after' });
  });
});

/** A seeded generator (mulberry32): the distribution test sees the same draws on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('jobs that fail together retry apart (a 503 storm)', () => {
  // 60 jobs fail at the same instant with the default budget. The server fires retry timers
  // with about a second's granularity: model it by rounding each retry up to its second.
  const budget = { baseMs: DEFAULT_BUDGET.backoffBaseMs, capMs: DEFAULT_BUDGET.backoffCapMs };
  const storm = (attempt: number, seed: number) => {
    const random = seeded(seed);
    const delays = Array.from({ length: 60 }, () => fullJitterMs(attempt, budget, random));
    const perSecond = new Map<number, number>();
    for (const d of delays) perSecond.set(Math.ceil(d / 1000), (perSecond.get(Math.ceil(d / 1000)) ?? 0) + 1);
    return { delays, busiest: Math.max(...perSecond.values()), seconds: perSecond.size };
  };

  // Drawn over 5 s, a second expects about 13 of the 60; 26 is over four standard deviations
  // away (the storm put 44 into one second; the old 1 s window put all 60 into the first).
  it('spreads each retry round over several timer seconds: no second holds more than 26 of 60 jobs', () => {
    for (let seed = 1; seed <= 200; seed++) {
      for (const attempt of [1, 2, 3]) {
        const { busiest, seconds } = storm(attempt, seed);
        expect(busiest, `attempt ${attempt}, seed ${seed}`).toBeLessThanOrEqual(26);
        expect(seconds).toBeGreaterThanOrEqual(5);
      }
    }
  });

  it('puts no pile of retries on the floor: a draw below it is not clamped onto it', () => {
    const random = seeded(7);
    const draws = Array.from({ length: 10_000 }, () => fullJitterMs(1, budget, random));
    expect(draws.filter((d) => d === MIN_RETRY_DELAY_MS).length).toBeLessThan(10);
    // Uniform over the window: each fifth of it holds about a fifth of the draws.
    const window = jitterWindowMs(1, budget);
    for (let k = 0; k < 5; k++) {
      const lo = MIN_RETRY_DELAY_MS + ((window - MIN_RETRY_DELAY_MS) * k) / 5;
      const hi = MIN_RETRY_DELAY_MS + ((window - MIN_RETRY_DELAY_MS) * (k + 1)) / 5;
      const share = draws.filter((d) => d >= lo && d < hi).length / draws.length;
      expect(share).toBeGreaterThan(0.17);
      expect(share).toBeLessThan(0.23);
    }
  });
});

describe('elapsed budget', () => {
  it('stops when the next delay would pass the deadline', () => {
    expect(exceedsBudget(1_000, 500, 2_000)).toBe(false);
    expect(exceedsBudget(1_000, 1_000, 2_000)).toBe(true);
    expect(exceedsBudget(1_000, 10_000_000, undefined)).toBe(false);
    // The next attempt needs room too: a delay that lands just before the deadline stops now.
    expect(exceedsBudget(1_000, 500, 3_000, attemptMarginMs(100))).toBe(true);
    expect(exceedsBudget(1_000, 500, 4_000, attemptMarginMs(100))).toBe(false);
    expect(attemptMarginMs(5_000)).toBe(10_000);
  });
});
