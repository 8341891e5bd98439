// Generated keys (issue 39 §1 "Keys"): at least 128 random bits, a visible scheme and prefix for
// support, and a throttling bucket that no two unrelated real keys share.
import { describe, expect, it } from 'vitest';
import { apiKeyPrefix, generateApiKey, generateOperatorKey, keyThrottlePrefix } from '../../lib/ids.js';

const bitsOf = (base64url: string) => Buffer.from(base64url, 'base64url').length * 8;

describe('generated keys', () => {
  it('tenant keys are dj_live_ + 192 random bits; operator keys dj_op_ + 192 random bits', () => {
    const tenant = generateApiKey();
    const operator = generateOperatorKey();
    expect(tenant).toMatch(/^dj_live_[A-Za-z0-9_-]{32}$/);
    expect(operator).toMatch(/^dj_op_[A-Za-z0-9_-]{32}$/);
    expect(bitsOf(tenant.slice('dj_live_'.length))).toBeGreaterThanOrEqual(128);
    expect(bitsOf(operator.slice('dj_op_'.length))).toBeGreaterThanOrEqual(128);
    const many = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(many.size).toBe(1000);
  });

  it('show support their scheme and 8 more characters, never the rest; a key chosen by hand shows nothing', () => {
    const key = generateApiKey();
    expect(apiKeyPrefix(key)).toBe(key.slice(0, 16));
    const op = generateOperatorKey();
    expect(apiKeyPrefix(op)).toBe(op.slice(0, 14));
    // Keys generated before the dj_live_ scheme keep their prefix.
    const legacy = `dj_${'A'.repeat(32)}`;
    expect(apiKeyPrefix(legacy)).toBe('dj_AAAAAAAA');
    for (const byHand of ['my-own-very-long-key-0123456789abcdef', 'dj_live_short', `dj_live_${'A'.repeat(33)}`])
      expect(apiKeyPrefix(byHand)).toBeNull();
  });
});

describe('the throttling bucket of a presented key', () => {
  it('is the scheme and 8 more characters for our schemes, else the first 8 characters', () => {
    expect(keyThrottlePrefix('dj_live_AbCdEfGhIjKlMn')).toBe('dj_live_AbCdEfGh');
    expect(keyThrottlePrefix('dj_op_AbCdEfGhIjKl')).toBe('dj_op_AbCdEfGh');
    expect(keyThrottlePrefix('some-guess-123')).toBe('some-gue');
    expect(keyThrottlePrefix(`dj_${'B'.repeat(32)}`)).toBe('dj_BBBBB');
  });

  it('never puts two random tenant keys in one bucket, so guessing dj_live_ keys cannot lock out every tenant', () => {
    const buckets = new Set(Array.from({ length: 200 }, () => keyThrottlePrefix(generateApiKey())));
    expect(buckets.size).toBe(200);
    expect(buckets.has('dj_live_')).toBe(false);
  });
});
