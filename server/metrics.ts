import { Counter, Gauge, type Registry } from 'prom-client';
import type { JobType } from '../contract/job-types.js';
import { cachedRead } from '../lib/cached-read.js';
import type { Logger } from '../lib/logger.js';
import { addIntakeRejections } from '../store/health.js';
import { lastScanRunAt } from '../store/scan-runs.js';
import type pg from 'pg';
import { WINDOWS, type PerWindow } from '../lib/health.js';
import { collectQueueHealth, type Flow, type HealthDeps, type QueueHealth, type TaskQueueStats } from '../services/queue-health.js';

type Setter = (labels: Record<string, string>, value: number | null) => void;
const num = (v: number | null | undefined) => (v === null || v === undefined ? 0 : v);

/** Every health metric and how it is read from the snapshot. Names are what ops/alerts.yml refers to. */
/** What a gauge knows besides the snapshot: the registered job types that declare a fallback. */
interface GaugeContext {
  fallbackTypes: readonly JobType[];
}

const HEALTH_METRICS: Array<[name: string, help: string, labels: string[], fill: (h: QueueHealth, set: Setter, c: GaugeContext) => void]> =
  [
    [
      'durable_jobs_backlog_jobs',
      'Unfinished jobs by type and state (Postgres).',
      ['job_type', 'state'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes))
          for (const st of ['queued', 'retrying', 'running', 'deferred'] as const) set({ job_type: t, state: st }, j.backlog[st]);
      },
    ],
    [
      'durable_jobs_backlog_oldest_waiting_age_seconds',
      'Longest a job of this type has been waiting for a worker right now (0: none waiting).',
      ['job_type'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestWaitingAgeSeconds));
      },
    ],
    [
      'durable_jobs_backlog_oldest_unfinished_age_seconds',
      'Age of the oldest admitted, unfinished job of this type.',
      ['job_type'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestUnfinishedAgeSeconds));
      },
    ],
    [
      'durable_jobs_deferred_oldest_age_seconds',
      'How long the oldest deferred job of this type has been held back.',
      ['job_type'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestDeferredAgeSeconds));
      },
    ],
    [
      'durable_jobs_task_queue_backlog',
      'Temporal approximate backlog count of the task queue.',
      ['task_queue', 'task_type'],
      (h, set) => eachQueue(h, set, (s) => s.backlogCount),
    ],
    [
      'durable_jobs_task_queue_backlog_age_seconds',
      'Temporal approximate backlog age of the task queue.',
      ['task_queue', 'task_type'],
      (h, set) => eachQueue(h, set, (s) => s.backlogAgeSeconds),
    ],
    [
      'durable_jobs_task_queue_dispatch_rate_per_second',
      'Temporal tasks dispatched per second.',
      ['task_queue', 'task_type'],
      (h, set) => eachQueue(h, set, (s) => s.dispatchRatePerSecond),
    ],
    [
      'durable_jobs_task_queue_pollers',
      'Workers polling the task queue.',
      ['task_queue', 'task_type'],
      (h, set) => eachQueue(h, set, (s) => s.pollers),
    ],
    [
      'durable_jobs_net_drain_per_minute',
      'Completions minus admitted arrivals per minute; negative: the backlog grows.',
      ['job_type', 'window'],
      (h, set) => eachRate(h, set, (f) => f.netDrainPerMinute),
    ],
    [
      'durable_jobs_recovery_eta_seconds',
      'Backlog / net drain over the window; +Inf when it does not shrink, 0 when empty.',
      ['window'],
      (h, set) => {
        for (const w of WINDOWS) {
          const r = h.recoveryByWindow[w.key];
          set({ window: w.key }, r.etaSeconds ?? Number.POSITIVE_INFINITY);
        }
      },
    ],
    [
      'durable_jobs_lease_overdue_attempts',
      'Attempts past their start-to-close deadline with no end and no successor (last hour).',
      [],
      (h, set) => set({}, h.leaseExpirations.overdue),
    ],
    [
      'durable_jobs_attempts_per_job',
      'Attempts per job over jobs finished in the last 15 min.',
      ['job_type', 'stat'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) {
          set({ job_type: t, stat: 'avg' }, num(j.attemptsPerJob.avg));
          set({ job_type: t, stat: 'max' }, num(j.attemptsPerJob.max));
        }
      },
    ],
    [
      'durable_jobs_queue_time_seconds',
      'Queue time (admitted to first started) of jobs finished in the last 15 min.',
      ['job_type', 'quantile'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) {
          set({ job_type: t, quantile: '0.5' }, j.queueSeconds.p50);
          set({ job_type: t, quantile: '0.95' }, j.queueSeconds.p95);
        }
      },
    ],
    [
      'durable_jobs_execution_time_seconds',
      'Execution time (first started to finished) of jobs finished in the last 15 min.',
      ['job_type', 'quantile'],
      (h, set) => {
        for (const [t, j] of Object.entries(h.jobTypes)) {
          set({ job_type: t, quantile: '0.5' }, j.executionSeconds.p50);
          set({ job_type: t, quantile: '0.95' }, j.executionSeconds.p95);
        }
      },
    ],
    [
      'durable_jobs_effects_in_doubt',
      'Pending effects that may have reached the upstream unseen.',
      [],
      (h, set) => set({}, h.reconciliations.effectsInDoubt),
    ],
    ['durable_jobs_dead_letters_open', 'Open dead letters.', [], (h, set) => set({}, h.deadLetters.open)],
    [
      'durable_jobs_dead_letter_oldest_open_age_seconds',
      'Age of the oldest open dead letter (0: none).',
      [],
      (h, set) => set({}, num(h.deadLetters.oldestOpenAgeSeconds)),
    ],
    ['durable_jobs_outbox_pending', 'Outbox rows not delivered yet.', [], (h, set) => set({}, h.outbox.pending)],
    ['durable_jobs_outbox_overdue', 'Outbox rows past their delivery deadline.', [], (h, set) => set({}, h.outbox.overdue)],
    [
      'durable_jobs_outbox_oldest_pending_age_seconds',
      'Age of the oldest undelivered outbox row (0: none): the outbox lag.',
      [],
      (h, set) => set({}, num(h.outbox.oldestPendingAgeSeconds)),
    ],
    [
      'durable_jobs_intake_rejections',
      'Submissions answered 503 (nothing persisted) in the window, from the durable per-minute counter.',
      ['window'],
      (h, set) => {
        for (const w of WINDOWS) set({ window: w.key }, h.intakeRejections.perWindow[w.key]);
      },
    ],
    [
      'durable_jobs_degradation_paused',
      '1 while the priority is paused by the degradation setting.',
      ['priority'],
      (h, set) => {
        for (const p of ['high', 'normal', 'low'] as const) set({ priority: p }, h.degradation.pausedPriorities.includes(p) ? 1 : 0);
      },
    ],
    [
      'durable_jobs_recovery_rate_per_minute',
      'Configured admission rate for deferred jobs when they resume.',
      [],
      (h, set) => set({}, h.degradation.recoveryRatePerMinute),
    ],
    [
      'durable_jobs_fallback_used',
      "Effects sent to the fallback upstream (an operator's recorded decision) by job type, in the window or all time.",
      ['job_type', 'window'],
      (h, set) => {
        for (const [t, f] of Object.entries(h.fallbackUsed)) {
          set({ job_type: t, window: 'all' }, f.total);
          for (const w of WINDOWS) set({ job_type: t, window: w.key }, f.perWindow[w.key]);
        }
      },
    ],
    [
      'durable_jobs_fallback_enabled',
      '1 while an operator has switched the job type to the fallback upstream.',
      ['job_type'],
      (h, set, c) => {
        for (const t of c.fallbackTypes) set({ job_type: t }, h.degradation.fallbackJobTypes.includes(t) ? 1 : 0);
      },
    ],
    [
      'durable_jobs_admissions_pending',
      'Resuming jobs holding a ramp slot not reached yet.',
      [],
      (h, set) => set({}, h.degradation.pendingAdmissions),
    ],
  ];

function eachQueue(h: QueueHealth, set: Setter, f: (s: TaskQueueStats) => number): void {
  for (const t of h.taskQueues) {
    if (t.workflow) set({ task_queue: t.name, task_type: 'workflow' }, f(t.workflow));
    if (t.activity) set({ task_queue: t.name, task_type: 'activity' }, f(t.activity));
  }
}

function eachRate(h: QueueHealth, set: Setter, f: (x: Flow) => PerWindow): void {
  for (const w of WINDOWS) set({ job_type: '*', window: w.key }, f(h.rates)[w.key]);
  for (const [t, j] of Object.entries(h.jobTypes)) for (const w of WINDOWS) set({ job_type: t, window: w.key }, f(j.rates)[w.key]);
}

/** Default reuse of one scrape's figures by the next scrapes of a process (`AppDeps.metricsCacheMs`). */
export const SCRAPE_CACHE_MS = 1_000;

export interface HealthMetrics {
  /** A submission answered 503: counted here (this process) and in the durable per-minute counter. */
  countRejection(cause: string): void;
  snapshot(): Promise<QueueHealth>;
}

/**
 * Registers the health gauges. They are computed on scrape from one snapshot (shared by all
 * gauges of that scrape); if Postgres cannot answer, `durable_jobs_health_up` is 0 and the
 * other gauges are left empty rather than stale.
 */
export function registerHealthMetrics(
  registry: Registry,
  deps: HealthDeps & { log: Logger; fallbackTypes: readonly JobType[]; cacheMs?: number | undefined },
): HealthMetrics {
  const cacheMs = deps.cacheMs ?? SCRAPE_CACHE_MS;
  const snapshot = cachedRead(() => flushRejections().then(() => collectQueueHealth(deps)), cacheMs);
  new Gauge({
    name: 'durable_jobs_health_up',
    help: '1 when the health figures could be read from Postgres.',
    registers: [registry],
    async collect() {
      this.set(
        await snapshot().then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
  for (const [name, help, labelNames, fill] of HEALTH_METRICS) {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        const h = await snapshot().catch(() => undefined);
        if (h)
          fill(
            h,
            (labels, value) => {
              if (value !== null) this.set(labels, value);
            },
            deps,
          );
      },
    });
  }
  const rejectionsTotal = new Counter({
    name: 'durable_jobs_intake_rejections_total',
    help: 'Submissions this process answered 503 (nothing persisted). Per process: sum(rate()) across processes; durable_jobs_intake_rejections{window} is the global figure.',
    labelNames: ['cause'],
    registers: [registry],
  });

  // Minute buckets not written yet (Postgres may be the very reason for the 503): retried on
  // the next rejection or scrape. Their minute is this host's clock, the only figure that is.
  const pending = new Map<string, { minute: Date; cause: string; count: number }>();
  async function flushRejections(): Promise<void> {
    for (const [k, v] of [...pending]) {
      try {
        pending.delete(k);
        await addIntakeRejections(deps.pool, v.minute, v.cause, v.count);
      } catch {
        const again = pending.get(k);
        pending.set(k, { ...v, count: v.count + (again?.count ?? 0) });
        return;
      }
    }
  }
  return {
    countRejection(cause) {
      rejectionsTotal.inc({ cause });
      const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000);
      const k = `${minute.toISOString()}|${cause}`;
      const cur = pending.get(k);
      pending.set(k, { minute, cause, count: (cur?.count ?? 0) + 1 });
      flushRejections().catch((e: Error) => deps.log.warn({ err: e.message }, 'could not record intake rejection'));
    },
    snapshot,
  };
}

/**
 * When the compensation scan last finished. Its repairs are a cumulative counter among the
 * checkpointed totals (`durable_jobs_scan_repairs_recorded`, server/metrics-totals.ts), so that
 * retention pruning old `scan_runs` never makes it drop.
 */
export function registerScanMetrics(registry: Registry, pool: pg.Pool): void {
  new Gauge({
    name: 'durable_jobs_scan_last_run_timestamp_seconds',
    help: 'When the compensation scan last finished (0: never)',
    registers: [registry],
    async collect() {
      this.reset();
      // Postgres down: no figure rather than a failed scrape (the other gauges still answer).
      const at = await lastScanRunAt(pool).catch(() => undefined);
      if (at !== undefined) this.set(at ? at.getTime() / 1000 : 0);
    },
  });
}

/** Inbound webhook requests by source and result: counted by this process (its own requests). */
export function registerWebhookMetrics(registry: Registry): Counter<'source' | 'result'> {
  return new Counter({
    name: 'durable_jobs_webhook_deliveries_total',
    help: 'Inbound webhook requests this process answered, by source and result (an outcome, duplicate, conflict, unauthorized or malformed). Per process: sum(rate()) across processes.',
    labelNames: ['source', 'result'] as const,
    registers: [registry],
  });
}

export { registerTotalMetrics } from './metrics-totals.js';
