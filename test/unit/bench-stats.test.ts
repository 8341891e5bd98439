import { describe, expect, it } from 'vitest';
import { conditionsText, markdownTable, type BenchResults } from '../../scripts/bench/report.js';
import { alternate, pairedRatios, row, spread } from '../../scripts/bench/stats.js';

describe('bench statistics', () => {
  it('keeps every sample to three decimals and reports a spread for few repeats', () => {
    const s = spread([10.12345, 12.98765, 11.55555, 13.33333, 9.87654]);
    expect(s.samples).toEqual([10.123, 12.988, 11.556, 13.333, 9.877]);
    expect(s.median).toBeCloseTo(11.556, 3);
    expect(s.iqr).toBeGreaterThan(0);
    expect(spread([1, 3]).iqr).toBe(1);
    expect(spread([5]).iqr).toBe(0);
  });

  it('takes the ratio as the median of the paired per-repeat ratios, with their spread', () => {
    // Repeat 3 is slow on both sides: the ratio of medians (20/10 = 2) hides that every pair says 1.
    const value = spread([10, 20, 40, 20, 10]);
    const base = spread([10, 20, 40, 20, 10].map((v) => v * 1));
    expect(pairedRatios(value.samples, base.samples)).toEqual([1, 1, 1, 1, 1]);
    const r = row({
      id: 'x',
      section: 's',
      figure: 'f',
      unit: 'u',
      value,
      baseline: { label: 'b', unit: 'u', value: base },
      sense: 'info',
      paired: true,
    });
    expect(r.ratio).toBe(1);
    expect(r.ratioSpread).toMatchObject({ min: 1, max: 1 });
    const skew = row({
      id: 'y',
      section: 's',
      figure: 'f',
      unit: 'u',
      value: spread([2, 4, 9]),
      baseline: { label: 'b', unit: 'u', value: spread([1, 4, 3]) },
      sense: 'info',
      paired: true,
    });
    expect(skew.ratio).toBe(2); // pairs 2, 1, 3: median 2; the ratio of the medians would say 4 / 3
    expect(skew.ratioSpread).toMatchObject({ min: 1, max: 3 });
  });

  it('alternates the order of the sides from one repeat to the next', () => {
    expect(alternate(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(alternate(['a', 'b', 'c'], 1)).toEqual(['c', 'b', 'a']);
    expect(alternate(['a', 'b'], 2)).toEqual(['a', 'b']);
  });

  it('writes the conditions paragraph from the run it describes', () => {
    const res: BenchResults = {
      meta: {
        startedAt: '2026-12-01T10:00:00.000Z',
        durationSec: 901,
        mode: 'full',
        cores: 2,
        cpuModel: 'Test CPU',
        memoryGb: 24,
        loadAverage: { start: [0.31, 1.2, 1.5], end: [3.5, 2.9, 2.1] },
        node: 'v20',
        postgres: 'Postgres 18.4',
        temporal: 'Temporal dev server',
        settings: { activitySlots: 50 },
      },
      rows: [],
      errors: [],
    };
    const text = conditionsText(res);
    expect(text).toContain('2026-12-01T10:00:00.000Z');
    expect(text).toContain('901 s');
    expect(text).toContain('0.31/1.20/1.50');
    expect(text).toContain('3.50/2.90/2.10');
    expect(text).toContain('Postgres 18.4; Temporal dev server');
    expect(text).toContain('activitySlots: 50');
    expect(markdownTable(res)).toContain('ratio: median of paired');
  });
});
