import { createHash } from 'node:crypto';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.js';
import {
  apiKeyHash,
  apiKeyHashCandidates,
  effectKeyFor,
  IDEMPOTENCY_KEY_PATTERN,
  inputHash,
  inputHashMatches,
  intentIdCandidates,
  jobIdFor,
  keyHash,
  keyIdFor,
  unkeyed,
} from '../../lib/ids.js';
import { currentServerSecret, persistedServerSecret, serverSecretFor, serverSecretFrom, useServerSecret } from '../../lib/secret.js';

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

describe('keyed derivation (server secret, F5)', () => {
  const A = 'secret-A-for-the-unit-tests-0123456789';
  const B = 'secret-B-for-the-unit-tests-0123456789';
  const withSecret = <T>(value: string, fn: () => T): T => {
    const before = currentServerSecret();
    useServerSecret(serverSecretFrom(value, undefined)!);
    try {
      return fn();
    } finally {
      useServerSecret(before);
    }
  };

  it('job IDs, key and input hashes, API key hashes and key IDs depend on the secret, and none is the unkeyed SHA-256', () => {
    const underA = withSecret(A, () => [
      jobIdFor('t', 's', 'k-0000001'),
      keyHash('t', 'k'),
      inputHash('s', { a: 1 }),
      apiKeyHash('x'),
      keyIdFor('x'),
    ]);
    const underB = withSecret(B, () => [
      jobIdFor('t', 's', 'k-0000001'),
      keyHash('t', 'k'),
      inputHash('s', { a: 1 }),
      apiKeyHash('x'),
      keyIdFor('x'),
    ]);
    underA.forEach((v, i) => expect(v).not.toBe(underB[i]));
    expect(underA[0]).not.toBe(unkeyed.jobIdFor('t', 's', 'k-0000001'));
    expect(underA[1]).not.toBe(unkeyed.keyHash('t', 'k'));
    expect(underA[2]).not.toBe(unkeyed.inputHash('s', { a: 1 }));
    expect(underA[3]).not.toBe(unkeyed.apiKeyHash('x'));
    expect(underA[4]).toMatch(/^[0-9a-f]{12}$/);
  });

  it('keeps the unkeyed derivation of before bit for bit (IDs of existing jobs)', () => {
    const sha = (...parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest('hex');
    expect(unkeyed.jobIdFor('beta', 'summarize', 'order-0001-summary')).toBe(
      `job-${sha('intent', 'beta', 'summarize', 'order-0001-summary').slice(0, 32)}`,
    );
    expect(unkeyed.keyHash('beta', 'k')).toBe(sha('key', 'beta', 'k'));
    expect(unkeyed.inputHash('summarize', { text: 'x' })).toBe(sha('input', 'summarize', '{"text":"x"}'));
    expect(unkeyed.apiKeyHash('key')).toBe(sha('api-key', 'key'));
  });

  it('lookups accept every listed secret, newest first, then unkeyed; the first derives', () => {
    const a = withSecret(A, () => intentIdCandidates('t', 's', 'k-0000001', { x: 1 })[0]!);
    const [first, second, last] = withSecret(`${B},${A}`, () => intentIdCandidates('t', 's', 'k-0000001', { x: 1 }));
    expect(second).toEqual(a);
    expect(first).toEqual(withSecret(B, () => intentIdCandidates('t', 's', 'k-0000001', { x: 1 })[0]));
    expect(last).toEqual({
      jobId: unkeyed.jobIdFor('t', 's', 'k-0000001'),
      keyHash: unkeyed.keyHash('t', 'k-0000001'),
      inputHash: unkeyed.inputHash('s', { x: 1 }),
    });
    expect(withSecret(`${B},${A}`, () => apiKeyHashCandidates('x'))).toEqual([
      withSecret(B, () => apiKeyHash('x')),
      withSecret(A, () => apiKeyHash('x')),
      unkeyed.apiKeyHash('x'),
    ]);
    expect(withSecret(`${B},${A}`, () => inputHashMatches(a.inputHash, 's', { x: 1 }))).toBe(true);
    expect(withSecret(B, () => inputHashMatches(a.inputHash, 's', { x: 1 }))).toBe(false);
  });
});

describe('the server secret (DURABLE_JOBS_SECRET)', () => {
  it('is a list of secrets of at least 32 characters; a short one is refused without quoting it', () => {
    expect(
      serverSecretFrom(' a-secret-of-at-least-32-characters-1 ,\n a-secret-of-at-least-32-characters-2 ', undefined)!.keys.map(String),
    ).toEqual(['a-secret-of-at-least-32-characters-1', 'a-secret-of-at-least-32-characters-2']);
    expect(() => serverSecretFrom('short-secret', undefined)).toThrow(/DURABLE_JOBS_SECRET: secret 1 of 1 is shorter than 32 characters/);
    expect(() => serverSecretFrom('short-secret', undefined)).not.toThrow(/short-secret/);
    expect(serverSecretFrom(undefined, undefined)).toBeUndefined();
  });

  it('prints as a label, never its value', () => {
    const s = serverSecretFrom('a-secret-of-at-least-32-characters-1', undefined)!;
    expect(JSON.stringify({ s })).toBe('{"s":"[server secret]"}');
    expect(inspect(s)).toBe('[server secret]');
    expect(`${String(s)}`).toBe('[server secret]');
  });

  it('reads DURABLE_JOBS_SECRET_FILE; production without a secret refuses, naming both variables', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'secret-'));
    writeFileSync(path.join(dir, 'file'), 'a-secret-of-at-least-32-characters-from-a-file\n');
    expect(String(serverSecretFrom(undefined, path.join(dir, 'file'))!.keys[0])).toBe('a-secret-of-at-least-32-characters-from-a-file');
    expect(() => serverSecretFrom(undefined, path.join(dir, 'missing'))).toThrow(
      /DURABLE_JOBS_SECRET_FILE: cannot read the file it names \(ENOENT\)/,
    );
    expect(() => serverSecretFor(undefined, 'production', dir)).toThrow(/DURABLE_JOBS_SECRET is not set.*DURABLE_JOBS_SECRET_FILE/);
  });

  it('dev mode generates one in the data folder (0600, 256 bits) and reads the same one back', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'secret-'));
    const first = serverSecretFor(undefined, 'dev', dir);
    const file = path.join(dir, 'server-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(String(first.keys[0])).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(serverSecretFor(undefined, 'dev', dir).keys[0]!.equals(first.keys[0]!)).toBe(true);
    expect(persistedServerSecret(dir).file).toBe(file);
  });
});
