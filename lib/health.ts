/**
 * Pure computations of the health figures: rates over sliding windows, net drain, the
 * recovery ETA and its words, sparklines. No I/O: the counts come from Postgres and
 * Temporal (store/health.ts), these functions only turn them into figures.
 */

/** The sliding windows every rate is reported over. */
export const WINDOWS = [
  { key: '1m', seconds: 60 },
  { key: '5m', seconds: 300 },
  { key: '15m', seconds: 900 },
] as const;
export type WindowKey = (typeof WINDOWS)[number]['key'];
export type PerWindow<T = number> = Record<WindowKey, T>;

/**
 * The window the headline ETA uses. One minute reacts to what the operator just changed
 * (a worker added, a pause lifted); the 5- and 15-minute figures sit beside it for trend.
 */
export const HEADLINE_WINDOW: WindowKey = '1m';

export const perWindow = <T>(f: (key: WindowKey, seconds: number) => T): PerWindow<T> =>
  Object.fromEntries(WINDOWS.map((w) => [w.key, f(w.key, w.seconds)])) as PerWindow<T>;

/** Events per minute from a count over a window of `windowSeconds`. */
export function ratePerMinute(count: number, windowSeconds: number): number {
  if (windowSeconds <= 0) return 0;
  return (count * 60) / windowSeconds;
}

/** Positive: the backlog shrinks. Negative: it grows. */
export function netDrain(completionsPerMinute: number, arrivalsPerMinute: number): number {
  return completionsPerMinute - arrivalsPerMinute;
}

export interface Recovery {
  /** `empty`: nothing waiting; `draining`: an ETA exists; `never`: the backlog does not shrink. */
  state: 'empty' | 'draining' | 'never';
  backlog: number;
  netDrainPerMinute: number;
  /** Seconds until the backlog is gone at the current net drain; null when `never`. */
  etaSeconds: number | null;
  /** The ETA in words, for people: "backlog 10,000 draining at 20/min: about 8 h 20 min". */
  words: string;
}

/** Recovery ETA = backlog / net drain; "never" when the backlog grows or stands still. */
export function recovery(backlog: number, netDrainPerMinute: number): Recovery {
  const b = Math.max(0, Math.round(backlog));
  if (b === 0) return { state: 'empty', backlog: 0, netDrainPerMinute, etaSeconds: 0, words: 'backlog empty' };
  if (netDrainPerMinute <= 0) {
    const how = netDrainPerMinute < 0 ? `growing at ${formatRate(-netDrainPerMinute)}` : 'not draining (0/min)';
    return { state: 'never', backlog: b, netDrainPerMinute, etaSeconds: null, words: `backlog ${formatCount(b)} ${how}: never` };
  }
  const etaSeconds = (b / netDrainPerMinute) * 60;
  return {
    state: 'draining',
    backlog: b,
    netDrainPerMinute,
    etaSeconds,
    words: `backlog ${formatCount(b)} draining at ${formatRate(netDrainPerMinute)}: ${formatDuration(etaSeconds)}`,
  };
}

/** 10000 → "10,000" (fixed locale: the report reads the same on every machine). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** 20 → "20/min", 0.25 → "0.25/min", 1234.5 → "1,235/min". */
export function formatRate(perMinute: number): string {
  const r = Math.abs(perMinute);
  const shown = r >= 10 ? formatCount(r) : String(Number(r.toPrecision(2)));
  return `${shown}/min`;
}

/**
 * A duration as people say it, rounded to what matters at that size:
 * 45 → "about 45 s", 200 → "about 3 min", 30000 → "about 8 h 20 min", 200000 → "about 2 d 7 h".
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return 'never';
  const s = Math.max(0, Math.round(seconds));
  if (s < 1) return 'less than 1 s';
  if (s < 90) return `about ${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `about ${minutes} min`;
  if (minutes < 48 * 60) {
    const h = Math.floor(minutes / 60);
    const m = minutes % 60;
    return m === 0 ? `about ${h} h` : `about ${h} h ${m} min`;
  }
  const hours = Math.round(minutes / 60);
  const d = Math.floor(hours / 24);
  const h = hours % 24;
  return h === 0 ? `about ${d} d` : `about ${d} d ${h} h`;
}

/** Seconds as a compact age: 75 → "1 min 15 s", 7200 → "2 h 0 min". */
export function formatAge(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

const BARS = '▁▂▃▄▅▆▇█';

/** A small trend line. Missing samples (null) show as a space; a flat series sits at the bottom. */
export function sparkline(values: Array<number | null>): string {
  const present = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (present.length === 0) return ' '.repeat(values.length);
  const min = Math.min(...present);
  const max = Math.max(...present);
  return values
    .map((v) => {
      if (v === null || !Number.isFinite(v)) return ' ';
      if (max === min) return max === 0 ? BARS[0] : BARS[3];
      return BARS[Math.min(BARS.length - 1, Math.floor(((v - min) / (max - min)) * BARS.length))];
    })
    .join('');
}

/**
 * The hard cap at admission: given the admission times of the last minute (any order),
 * 0 when one more fits under `ratePerMinute`, else how long until the oldest that blocks ages out.
 */
export function admissionWaitMs(nowMs: number, admittedLastMinuteMs: number[], ratePerMinute: number): number {
  const recent = admittedLastMinuteMs.filter((t) => t > nowMs - 60_000).sort((a, b) => a - b);
  if (recent.length < ratePerMinute) return 0;
  const blocker = recent[recent.length - ratePerMinute]!;
  return Math.max(1, blocker + 60_000 - nowMs);
}

/**
 * Unfinished jobs at the end of each minute, rebuilt backwards from the count now: one
 * minute earlier there were as many as now, minus that minute's arrivals, plus its
 * completions. Inputs oldest first; the last minute is the current, partial one.
 */
export function unfinishedSeries(unfinishedNow: number, arrivals: number[], completions: number[]): number[] {
  const out = new Array<number>(arrivals.length);
  let u = unfinishedNow;
  for (let i = arrivals.length - 1; i >= 0; i--) {
    out[i] = Math.max(0, u);
    u = u - arrivals[i]! + (completions[i] ?? 0);
  }
  return out;
}
