import { describe, expect, it } from 'vitest';
import { spread } from '../../scripts/bench/stats.js';

describe('bench statistics', () => {
  it('keeps every sample to three decimals and reports a spread for few repeats', () => {
    const s = spread([10.12345, 12.98765, 11.55555, 13.33333, 9.87654]);
    expect(s.samples).toEqual([10.123, 12.988, 11.556, 13.333, 9.877]);
    expect(s.median).toBeCloseTo(11.556, 3);
    expect(s.iqr).toBeGreaterThan(0);
    expect(spread([1, 3]).iqr).toBe(1);
    expect(spread([5]).iqr).toBe(0);
  });
});
