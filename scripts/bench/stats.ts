// Statistics and result rows shared by every measurement module.

/** One figure measured several times: each repeat contributes one sample. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Interquartile range (q3 - q1) of the samples; 0 with fewer than 4 samples. */
  iqr: number;
  samples: number[];
}

/** One row of the report: a figure beside its baseline. */
export interface BenchRow {
  /** Stable identifier (used by the smoke test and in results.json). */
  id: string;
  section: string;
  figure: string;
  unit: string;
  value: Spread | null;
  baseline: { label: string; unit: string; value: Spread | null } | null;
  /**
   * The median of the paired ratios (each repeat's value / the same repeat's baseline) when the
   * row has pairs, otherwise median(value) / median(baseline); null when either is missing.
   */
  ratio: number | null;
  /** The paired ratios' spread (one per repeat), when value and baseline were measured in pairs. */
  ratioSpread?: Spread;
  /** How to read the ratio: 'higher-better' (throughput) or 'lower-better' (latency, memory). */
  sense: 'higher-better' | 'lower-better' | 'info';
  notes?: string;
  /** Set when the measurement could not run; value and ratio are then null. */
  skipped?: string;
  /** Free-form details (raw per-repeat figures, EXPLAIN plans, settings). */
  details?: Record<string, unknown>;
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function spread(samples: number[]): Spread {
  const s = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(s, 0.5),
    min: s[0] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
    // Interpolated quartiles: defined for two samples or more (a single sample has no spread).
    iqr: s.length >= 2 ? quantile(s, 0.75) - quantile(s, 0.25) : 0,
    // Not `.map(round)`: map passes the index as `digits`, which rounded sample i to i decimals.
    samples: samples.map((v) => round(v)),
  };
}

/** p50 and p99 of one series of latencies (ms). */
export function percentiles(latenciesMs: number[]): { p50: number; p99: number; n: number } {
  const s = [...latenciesMs].sort((a, b) => a - b);
  return { p50: quantile(s, 0.5), p99: quantile(s, 0.99), n: s.length };
}

export function round(n: number, digits = 3): number {
  if (!Number.isFinite(n)) return n;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Each repeat's a / b: the pairs were measured side by side, so noise that hits both cancels. */
export function pairedRatios(a: number[], b: number[]): number[] {
  if (a.length !== b.length) throw new Error(`paired ratios need as many values as baselines (${a.length} vs ${b.length})`);
  return a.map((v, i) => v / b[i]!).filter((x) => Number.isFinite(x));
}

/**
 * Builds a row. With `paired` (value and baseline measured in the same repeats, in the same
 * order of samples), the ratio is the median of the paired ratios, with their spread; otherwise
 * the ratio of the medians.
 */
export function row(r: Omit<BenchRow, 'ratio' | 'ratioSpread'> & { ratio?: number | null; paired?: boolean }): BenchRow {
  const { paired, ...rest } = r;
  if (paired && r.value && r.baseline?.value && r.ratio === undefined) {
    const rs = spread(pairedRatios(r.value.samples, r.baseline.value.samples));
    if (rs.samples.length > 0) return { ...rest, ratio: round(rs.median, 3), ratioSpread: rs };
  }
  const ratio =
    r.ratio !== undefined
      ? r.ratio
      : r.value && r.baseline?.value && r.baseline.value.median !== 0
        ? r.value.median / r.baseline.value.median
        : null;
  return { ...rest, ratio: ratio === null ? null : round(ratio, 3) };
}

/**
 * The order of the sides in repeat `r`: forward in even repeats, reversed in odd ones (ABBA),
 * so no side always runs first (on a warmer cache) or last (on a bigger file).
 */
export function alternate<T>(sides: readonly T[], r: number): T[] {
  return r % 2 === 0 ? [...sides] : [...sides].reverse();
}

export function skippedRow(id: string, section: string, figure: string, reason: string): BenchRow {
  return { id, section, figure, unit: '', value: null, baseline: null, ratio: null, sense: 'info', skipped: reason };
}

/** Elapsed milliseconds of `fn`, with a high-resolution clock. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

export { pool } from '../lib/pool.js';

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `fn` until it returns a value; throws with `what` after the deadline (broken code, not slowness). */
export async function waitUntil<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(everyMs);
  }
}
