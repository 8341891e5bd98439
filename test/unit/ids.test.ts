import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.js';
import { apiKeyHash, effectKeyFor, IDEMPOTENCY_KEY_PATTERN, inputHash, jobIdFor, keyHash } from '../../lib/ids.js';

describe('job ID derivation', () => {
  it('is deterministic per (tenant, type, key) and hides the key', () => {
    const a = jobIdFor('t1', 'summarize', 'order-123-summary');
    expect(a).toBe(jobIdFor('t1', 'summarize', 'order-123-summary'));
    expect(a).toMatch(/^job-[0-9a-f]{32}$/);
    expect(a).not.toContain('order');
  });

  it('differs when the tenant, type or key differs, and field boundaries cannot be shifted', () => {
    const base = jobIdFor('t1', 'summarize', 'key-00001');
    expect(jobIdFor('t2', 'summarize', 'key-00001')).not.toBe(base);
    expect(jobIdFor('t1', 'purchase', 'key-00001')).not.toBe(base);
    expect(jobIdFor('t1', 'summarize', 'key-00002')).not.toBe(base);
    expect(jobIdFor('ab', 'c', 'key-00001')).not.toBe(jobIdFor('a', 'bc', 'key-00001'));
  });

  it('key hashes are per tenant; API key hashes never equal the key', () => {
    expect(keyHash('t1', 'k')).not.toBe(keyHash('t2', 'k'));
    expect(apiKeyHash('secret-key')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('input hashes ignore key order but not values', () => {
    expect(inputHash('summarize', { text: 'a', notifyEmail: 'x@y.z' })).toBe(inputHash('summarize', { notifyEmail: 'x@y.z', text: 'a' }));
    expect(inputHash('summarize', { text: 'a' })).not.toBe(inputHash('summarize', { text: 'b' }));
    expect(inputHash('summarize', { text: 'a' })).not.toBe(inputHash('purchase', { text: 'a' }));
  });

  it('effect keys are stable per job and step, never per attempt', () => {
    expect(effectKeyFor('job-1', 'charge')).toBe('job-1:charge');
  });

  it('accepts 8-255 visible ASCII characters as idempotency keys, nothing else', () => {
    expect(IDEMPOTENCY_KEY_PATTERN.test('abcdefgh')).toBe(true);
    expect(IDEMPOTENCY_KEY_PATTERN.test('x'.repeat(255))).toBe(true);
    for (const bad of ['short', 'x'.repeat(256), 'with space1', 'tab\there1', 'clé-unique', '']) {
      expect(IDEMPOTENCY_KEY_PATTERN.test(bad)).toBe(false);
    }
  });
});

describe('canonical JSON', () => {
  it('sorts keys recursively and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson('s')).toBe('"s"');
  });
});
