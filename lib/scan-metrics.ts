import type pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import { scanTotals } from '../store/scan.js';

const KINDS = {
  windowsFilled: 'missed_window',
  intentsStarted: 'intent_started',
  outboxRedelivered: 'outbox_redelivered',
  effectsReconciled: 'effect_reconciled',
  effectsNotApplied: 'effect_not_applied',
  replaysStarted: 'replay_started',
  replaysFinished: 'replay_finished',
  webhooksResignalled: 'webhook_resignalled',
  errors: 'error',
} as const;

/**
 * The compensation scan's repairs as Prometheus metrics. The scan runs in a worker, so the
 * counts come from `scan_runs` (the durable record) at scrape time, not from an in-process
 * counter that a worker restart would reset.
 */
export function registerScanMetrics(registry: Registry, pool: pg.Pool): void {
  new Counter({
    name: 'durable_jobs_scan_repairs_total',
    help: 'Repairs made by the compensation scan, by kind (missed_window, intent_started, outbox_redelivered, effect_reconciled, effect_not_applied, replay_started, replay_finished, webhook_resignalled, error)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const t = await scanTotals(pool);
      this.reset();
      for (const [field, kind] of Object.entries(KINDS)) this.inc({ kind }, t[field as keyof typeof KINDS]);
    },
  });
  new Gauge({
    name: 'durable_jobs_scan_last_run_timestamp_seconds',
    help: 'When the compensation scan last finished (0: never)',
    registers: [registry],
    async collect() {
      const t = await scanTotals(pool);
      this.set(t.lastRunAt ? t.lastRunAt.getTime() / 1000 : 0);
    },
  });
}
