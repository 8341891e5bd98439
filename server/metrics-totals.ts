// The cumulative figures and histograms derived from durable rows (services/metric-totals.ts):
// monotonic, the same in every API process. Global figures, not per-process counters: gauges
// named `_recorded` (aggregate with max() across processes; increase() or delta() over time).
import { Gauge, type Metric, type Registry } from 'prom-client';
import type pg from 'pg';
import { cachedRead } from '../lib/cached-read.js';
import type { Logger } from '../lib/logger.js';
import { collectTotals, HISTOGRAMS, SCAN_REPAIR_KINDS, TIME_BUCKETS, TOTAL_METRICS, type TotalRow } from '../services/metric-totals.js';

/** Label names of each cumulative figure (store/metric-totals.ts builds the same label sets). */
const TOTAL_LABELS: Record<keyof typeof TOTAL_METRICS, string[]> = {
  accepted: ['job_type'],
  completed: ['job_type', 'outcome'],
  attempts: ['job_type', 'outcome', 'error_class'],
  reconciliations: ['job_type'],
  deadLetters: ['job_type'],
  leaseExpirations: ['job_type'],
  scanRepairs: ['kind'],
};
const TOTAL_HELP: Record<keyof typeof TOTAL_METRICS, string> = {
  accepted: 'Jobs accepted (one per job row: duplicates of an idempotency key are not counted again), by job type.',
  completed: 'Jobs that reached a final state, by job type and outcome (succeeded, dead_lettered, cancelled).',
  attempts: 'Recorded attempts by job type, outcome and error class (none when it succeeded).',
  reconciliations: 'Attempts that reconciled an in-doubt effect with the upstream, by job type.',
  deadLetters: 'Dead letters created, by job type (npm run dlq -- list groups them by error class).',
  leaseExpirations: 'Attempts that lost their lease (worker died or blocked), by job type, when detected.',
  scanRepairs: `Repairs made by the compensation scan, by kind (${Object.keys(SCAN_REPAIR_KINDS).join(', ')}), from scan_runs.`,
};
/** Series that exist before their first event, so that increase() sees the first ones too. */
const SEEDED: Partial<Record<keyof typeof TOTAL_METRICS, (t: string) => Array<Record<string, string>>>> = {
  scanRepairs: () => Object.keys(SCAN_REPAIR_KINDS).map((kind) => ({ kind })),
  accepted: (t) => [{ job_type: t }],
  completed: (t) => ['succeeded', 'dead_lettered', 'cancelled'].map((outcome) => ({ job_type: t, outcome })),
  reconciliations: (t) => [{ job_type: t }],
  deadLetters: (t) => [{ job_type: t }],
  leaseExpirations: (t) => [{ job_type: t }],
};

/**
 * Monotonic figures and histograms derived from durable rows at scrape time (schema 0013:
 * stored totals up to a checkpoint, plus the rows after it through the timestamp indexes), so
 * increase() works and every API process reports the same value: aggregate them across
 * instances with max(), never sum(). Postgres down: no samples, the families stay declared.
 */
export function registerTotalMetrics(
  registry: Registry,
  deps: { pool: pg.Pool; jobTypes: readonly string[]; log: Logger; cacheMs?: number | undefined },
): void {
  // Reused by the scrapes of the next second (`AppDeps.metricsCacheMs`, default 1000 ms).
  const cacheMs = deps.cacheMs ?? 1_000;
  const totals = cachedRead(
    () => collectTotals(deps.pool, {}, (e) => deps.log.warn({ err: e.message }, 'could not advance the metric checkpoint')),
    cacheMs,
  );
  for (const [key, name] of Object.entries(TOTAL_METRICS) as Array<[keyof typeof TOTAL_METRICS, string]>) {
    new Gauge({
      name,
      help: `${TOTAL_HELP[key]} Since the start, from Postgres: the same in every API process (max() across processes).`,
      labelNames: TOTAL_LABELS[key],
      registers: [registry],
      async collect() {
        this.reset();
        const rows = await totals().catch(() => undefined);
        if (!rows) return;
        for (const t of deps.jobTypes) for (const labels of SEEDED[key]?.(t) ?? []) this.set(labels, 0);
        for (const r of rows) if (r.metric === name) this.set(r.labels, r.value);
      },
    });
  }
  const help = {
    [HISTOGRAMS.queue]:
      'Queue time of finished jobs (admitted to first started; a deferral is not queue time), by job type, observed when the job finishes.',
    [HISTOGRAMS.execution]:
      "Execution time of finished jobs (the attempts' spans: slot waits and back-offs excluded), by job type, observed when the job finishes.",
  };
  for (const name of Object.values(HISTOGRAMS))
    registry.registerMetric(derivedHistogram(name, help[name], totals, deps.jobTypes) as unknown as Metric);
}

/**
 * A histogram whose bucket counts are read, not observed: prom-client's Histogram only
 * counts observe() calls of this process. Same text format (`_bucket{le}`, `_sum`, `_count`).
 */
function derivedHistogram(name: string, help: string, totals: () => Promise<TotalRow[]>, jobTypes: readonly string[]) {
  const les = [...TIME_BUCKETS.map(String), '+Inf'];
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'max',
    reset() {
      /* nothing is kept here */
    },
    async get() {
      const rows = await totals().catch(() => undefined);
      if (!rows) return { name, help, type: 'histogram', aggregator: 'max', values: [] };
      const byType = new Map<string, Map<string, number>>();
      for (const t of jobTypes) byType.set(t, new Map());
      for (const r of rows) {
        const part = r.metric.slice(name.length);
        if (!r.metric.startsWith(name) || !['_bucket', '_sum', '_count'].includes(part)) continue;
        const m = byType.get(r.labels.job_type!) ?? new Map<string, number>();
        byType.set(r.labels.job_type!, m);
        m.set(part === '_bucket' ? r.labels.le! : part, r.value);
      }
      const values: Array<{ metricName: string; labels: Record<string, string>; value: number }> = [];
      for (const [job_type, m] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
        for (const le of les) values.push({ metricName: `${name}_bucket`, labels: { job_type, le }, value: m.get(le) ?? 0 });
        values.push({ metricName: `${name}_sum`, labels: { job_type }, value: m.get('_sum') ?? 0 });
        values.push({ metricName: `${name}_count`, labels: { job_type }, value: m.get('_count') ?? 0 });
      }
      return { name, help, type: 'histogram', aggregator: 'max', values };
    },
  };
}
