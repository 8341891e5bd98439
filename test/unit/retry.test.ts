import { describe, expect, it } from 'vitest';
import {
  attemptMarginMs,
  chooseDelay,
  classifyStatus,
  errorClassForStatus,
  exceedsBudget,
  fullJitterMs,
  MAX_RETRY_AFTER_MS,
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
  it('stays within [floor, min(cap, base * 2^attempt)] over many draws, and spreads over the range', () => {
    const opts = { baseMs: 500, capMs: 30_000 };
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(opts.capMs, opts.baseMs * 2 ** attempt);
      const draws = Array.from({ length: 2_000 }, () => fullJitterMs(attempt, opts));
      for (const d of draws) {
        expect(d).toBeGreaterThanOrEqual(MIN_RETRY_DELAY_MS);
        expect(d).toBeLessThanOrEqual(ceiling);
      }
      // Full jitter, not "exponential plus a little": draws cover the whole range.
      expect(Math.max(...draws)).toBeGreaterThan(ceiling * 0.9);
      expect(Math.min(...draws)).toBeLessThan(Math.max(MIN_RETRY_DELAY_MS, ceiling * 0.1) + 1);
    }
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
