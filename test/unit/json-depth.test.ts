import { describe, expect, it } from 'vitest';
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../../lib/json-safety.js';

describe('jsonNestedDeeperThan', () => {
  it('counts objects and arrays, up to the limit and past it', () => {
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(jsonNestedDeeperThan(nest(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonNestedDeeperThan(nest(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonNestedDeeperThan('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))).toBe(true); // no recursion, no overflow
    expect(jsonNestedDeeperThan(JSON.stringify({ a: [{ b: [1, 2, { c: {} }] }] }), 6)).toBe(false);
    expect(jsonNestedDeeperThan(JSON.stringify({ a: [{ b: [1, 2, { c: {} }] }] }), 5)).toBe(true);
  });

  it('ignores brackets inside strings, also after escaped quotes and backslashes', () => {
    expect(jsonNestedDeeperThan(JSON.stringify({ s: '['.repeat(500) }), 2)).toBe(false);
    expect(jsonNestedDeeperThan(JSON.stringify({ s: 'say \\"[[[[\\" \\\\', t: '{{{{' }), 1)).toBe(false);
    expect(jsonNestedDeeperThan(JSON.stringify({ s: '\\', t: [[[]]] }), 3)).toBe(true);
  });
});
