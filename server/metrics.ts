import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import {
  formatCount, formatDuration, formatRate, HEADLINE_WINDOW, netDrain, perWindow, ratePerMinute, recovery, unfinishedSeries, WINDOWS,
  type PerWindow, type Recovery, type WindowKey,
} from '../lib/health.js';
import { getSetting, pendingReservations, type DegradationSetting } from '../store/degradation.js';
import { fallbackUsedByType } from '../store/fallback.js';
import type { JobType } from '../contract/job-types.js';
import * as q from '../store/health.js';
import type { Logger } from '../lib/logger.js';

/**
 * The queue-health snapshot: every figure derived from Postgres rows (database clock) and
 * Temporal's task-queue statistics, never from this process's memory, so every API process
 * reports the same numbers. Used by `GET /v1/admin/queue-health`, `/metrics` and `npm run health`.
 */
export interface HealthDeps { pool: pg.Pool; temporal?: Client; taskQueues: string[] }

export interface TaskQueueStats { backlogCount: number; backlogAgeSeconds: number; addRatePerSecond: number; dispatchRatePerSecond: number; pollers: number }
export interface TaskQueueHealth { name: string; workflow: TaskQueueStats | null; activity: TaskQueueStats | null; note?: string }

export interface Flow { arrivalsPerMinute: PerWindow; enteredPerMinute: PerWindow; completionsPerMinute: PerWindow; netDrainPerMinute: PerWindow }
export interface Backlog {
  /** Admitted, unfinished jobs: what must complete for the queue to be empty (the ETA's backlog). */
  active: number; queued: number; retrying: number; running: number; deferred: number;
  oldestWaitingAgeSeconds: number | null; oldestUnfinishedAgeSeconds: number | null; oldestDeferredAgeSeconds: number | null;
}
export interface JobTypeHealth {
  backlog: Backlog; rates: Flow; recovery: Recovery;
  finished15m: { succeeded: number; deadLettered: number; cancelled: number };
  attemptsPerJob: { avg: number | null; max: number | null };
  /** Queue time after admission (deferral excluded) and execution time, over jobs finished in the last 15 min. */
  queueSeconds: { p50: number | null; p95: number | null };
  executionSeconds: { p50: number | null; p95: number | null };
  leaseExpirations: PerWindow;
}

export interface QueueHealth {
  generatedAt: string;
  headlineWindow: WindowKey;
  taskQueues: TaskQueueHealth[];
  backlog: Backlog;
  rates: Flow;
  recovery: Recovery;
  recoveryByWindow: PerWindow<Recovery>;
  jobTypes: Record<string, JobTypeHealth>;
  leaseExpirations: { perWindow: PerWindow; overdue: number };
  attempts: { byOutcome: Record<string, PerWindow> };
  reconciliations: { perWindow: PerWindow; effectsInDoubt: number };
  deadLetters: { source: 'dead_letters' | 'job_intents'; open: number; oldestOpenAgeSeconds: number | null; newPerWindow: PerWindow; growthPerMinute: PerWindow };
  outbox: { pending: number; overdue: number; oldestPendingAgeSeconds: number | null };
  intakeRejections: { perWindow: PerWindow; perMinute: PerWindow };
  /** Effects sent to the fallback upstream by job type (each an operator's recorded decision). */
  fallbackUsed: Record<string, { total: number; perWindow: PerWindow }>;
  degradation: DegradationSetting & { pendingAdmissions: number; lastSlotAt: string | null; resume: { deferred: number; etaSeconds: number; words: string } | null };
  history?: HealthHistory;
}

export interface HealthHistory {
  minutes: string[];
  arrivals: number[];
  completions: number[];
  unfinished: number[];
  /** Per-minute samples of figures that cannot be rebuilt for the past; null where no sample was taken. */
  samples: Record<string, Array<number | null>>;
}

const zero = (): PerWindow => perWindow(() => 0);
const round2 = (n: number) => Math.round(n * 100) / 100;

function flowOf(arr: PerWindow, ent: PerWindow, done: PerWindow): Flow {
  const rate = (c: PerWindow) => perWindow((k, s) => round2(ratePerMinute(c[k], s)));
  const arrivalsPerMinute = rate(arr);
  const enteredPerMinute = rate(ent);
  const completionsPerMinute = rate(done);
  return { arrivalsPerMinute, enteredPerMinute, completionsPerMinute, netDrainPerMinute: perWindow((k) => round2(netDrain(completionsPerMinute[k], enteredPerMinute[k]))) };
}

const pick = <P extends string>(row: Record<string, unknown> | undefined, prefix: P): PerWindow =>
  perWindow((k) => Number(row?.[`${prefix}_${k}`] ?? 0));

function longToNumber(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  return Number((v as { toString(): string }).toString());
}

async function describeQueue(temporal: Client, name: string, type: number): Promise<TaskQueueStats | null> {
  const res = await temporal.connection.withDeadline(Date.now() + 3_000, () => temporal.workflowService.describeTaskQueue({
    namespace: temporal.options.namespace, taskQueue: { name }, taskQueueType: type, reportStats: true,
  }));
  const s = res.stats;
  if (!s) return null; // servers before 1.28 report no stats in default mode
  const age = s.approximateBacklogAge;
  return {
    backlogCount: longToNumber(s.approximateBacklogCount),
    backlogAgeSeconds: age ? longToNumber(age.seconds) + (age.nanos ?? 0) / 1e9 : 0,
    addRatePerSecond: round2(s.tasksAddRate ?? 0),
    dispatchRatePerSecond: round2(s.tasksDispatchRate ?? 0),
    pollers: res.pollers?.length ?? 0,
  };
}

/** Temporal's own view of each task queue (workflow and activity tasks); a failure is reported, never fatal. */
export async function taskQueueHealth(temporal: Client | undefined, names: string[]): Promise<TaskQueueHealth[]> {
  const T = proto.temporal.api.enums.v1.TaskQueueType;
  return Promise.all(names.map(async (name) => {
    if (!temporal) return { name, workflow: null, activity: null, note: 'no Temporal client: figures from Postgres only' };
    try {
      const [workflow, activity] = await Promise.all([
        describeQueue(temporal, name, T.TASK_QUEUE_TYPE_WORKFLOW), describeQueue(temporal, name, T.TASK_QUEUE_TYPE_ACTIVITY),
      ]);
      return { name, workflow, activity, ...(workflow || activity ? {} : { note: 'the server reports no task-queue stats (before 1.28): backlog from Postgres' }) };
    } catch (err) {
      return { name, workflow: null, activity: null, note: `Temporal unavailable: ${(err as Error).message}` };
    }
  }));
}

function backlogOf(r: q.BacklogRow | undefined): Backlog {
  const queued = r?.queued ?? 0; const retrying = r?.retrying ?? 0; const running = r?.running ?? 0;
  return {
    active: queued + retrying + running, queued, retrying, running, deferred: r?.deferred ?? 0,
    oldestWaitingAgeSeconds: r?.oldest_waiting_s ?? null, oldestUnfinishedAgeSeconds: r?.oldest_unfinished_s ?? null, oldestDeferredAgeSeconds: r?.oldest_deferred_s ?? null,
  };
}

function sumBacklog(rows: q.BacklogRow[]): q.BacklogRow {
  const max = (k: 'oldest_waiting_s' | 'oldest_unfinished_s' | 'oldest_deferred_s') => {
    const v = rows.map((r) => r[k]).filter((x): x is number => x !== null);
    return v.length ? Math.max(...v) : null;
  };
  const sum = (k: 'queued' | 'retrying' | 'running' | 'deferred') => rows.reduce((a, r) => a + r[k], 0);
  return { job_type: '*', queued: sum('queued'), retrying: sum('retrying'), running: sum('running'), deferred: sum('deferred'), oldest_waiting_s: max('oldest_waiting_s'), oldest_unfinished_s: max('oldest_unfinished_s'), oldest_deferred_s: max('oldest_deferred_s') };
}

/** Deferred jobs come back at the recovery rate once their priority is no longer paused. */
function resumeEstimate(deferred: number, s: DegradationSetting): { deferred: number; etaSeconds: number; words: string } | null {
  if (deferred === 0) return null;
  const etaSeconds = (deferred / s.recoveryRatePerMinute) * 60;
  const when = s.pausedPriorities.length > 0 ? `once ${s.pausedPriorities.join(', ')} is resumed` : 'resuming now';
  return { deferred, etaSeconds, words: `${formatCount(deferred)} deferred, ${when} at ${formatRate(s.recoveryRatePerMinute)}: ${formatDuration(etaSeconds)}` };
}

const addWindows = (a: PerWindow, b: PerWindow): PerWindow => perWindow((k) => a[k] + b[k]);

/** The whole snapshot. Queries run one after another on the pool: a scrape must not take every connection. */
export async function collectQueueHealth(deps: HealthDeps, opts: { historyMinutes?: number } = {}): Promise<QueueHealth> {
  const db = deps.pool;
  const tq = taskQueueHealth(deps.temporal, deps.taskQueues);
  const { now } = await q.unfinishedNow(db);
  const backlog = await q.backlogByType(db);
  const arrivals = await q.arrivalsByType(db);
  const completions = await q.completionsByType(db);
  const admitted = await q.admittedByType(db);
  const leases = await q.leaseExpirationsByType(db);
  const overdue = await q.overdueLeases(db);
  const outcomes = await q.attemptOutcomes(db);
  const inDoubt = await q.effectsInDoubt(db);
  const hasDl = await q.tableExists(db, 'dead_letters');
  const dl = hasDl ? await q.deadLetterFigures(db) : await q.deadLetteredJobFigures(db);
  const outbox = await q.outboxFigures(db);
  const rejections = await q.intakeRejections(db);
  const setting = await getSetting(db);
  const pending = await pendingReservations(db);
  const fallback = await fallbackUsedByType(db);

  const types = [...new Set([...backlog, ...arrivals, ...completions, ...admitted, ...leases].map((r) => r.job_type))].sort();
  const jobTypes: Record<string, JobTypeHealth> = {};
  let arrAll = zero(); let entAll = zero(); let doneAll = zero(); let expAll = zero();
  for (const t of types) {
    const a = arrivals.find((r) => r.job_type === t) as Record<string, unknown> | undefined;
    const c = completions.find((r) => r.job_type === t);
    const arr = pick(a, 'arr');
    const ent = addWindows(pick(a, 'ent'), pick(admitted.find((r) => r.job_type === t), 'adm'));
    const done = pick(c as Record<string, unknown> | undefined, 'done');
    const exp = pick(leases.find((r) => r.job_type === t), 'exp');
    arrAll = addWindows(arrAll, arr); entAll = addWindows(entAll, ent); doneAll = addWindows(doneAll, done); expAll = addWindows(expAll, exp);
    const b = backlogOf(backlog.find((r) => r.job_type === t));
    const rates = flowOf(arr, ent, done);
    jobTypes[t] = {
      backlog: b, rates, recovery: recovery(b.active, rates.netDrainPerMinute[HEADLINE_WINDOW]),
      finished15m: { succeeded: c?.succeeded_15m ?? 0, deadLettered: c?.dead_lettered_15m ?? 0, cancelled: c?.cancelled_15m ?? 0 },
      attemptsPerJob: { avg: c?.attempts_avg != null ? round2(c.attempts_avg) : null, max: c?.attempts_max ?? null },
      queueSeconds: { p50: c?.queue_p50_s ?? null, p95: c?.queue_p95_s ?? null },
      executionSeconds: { p50: c?.exec_p50_s ?? null, p95: c?.exec_p95_s ?? null },
      leaseExpirations: exp,
    };
  }
  const total = backlogOf(sumBacklog(backlog));
  const rates = flowOf(arrAll, entAll, doneAll);
  const byOutcome: Record<string, PerWindow> = {};
  for (const o of outcomes) byOutcome[o.outcome] = pick(o as Record<string, unknown>, 'n');
  const rej = perWindow((k) => rejections.find((r) => r.window === k)?.count ?? 0);
  const dlNew = pick(dl as Record<string, unknown>, 'new');

  const health: QueueHealth = {
    generatedAt: now.toISOString(),
    headlineWindow: HEADLINE_WINDOW,
    taskQueues: await tq,
    backlog: total,
    rates,
    recovery: recovery(total.active, rates.netDrainPerMinute[HEADLINE_WINDOW]),
    recoveryByWindow: perWindow((k) => recovery(total.active, rates.netDrainPerMinute[k])),
    jobTypes,
    leaseExpirations: { perWindow: expAll, overdue },
    attempts: { byOutcome },
    reconciliations: { perWindow: byOutcome.reconciled ?? zero(), effectsInDoubt: inDoubt },
    deadLetters: {
      source: hasDl ? 'dead_letters' : 'job_intents', open: dl.open, oldestOpenAgeSeconds: dl.oldest_open_s,
      newPerWindow: dlNew, growthPerMinute: perWindow((k, s) => round2(ratePerMinute(dlNew[k], s))),
    },
    outbox: { pending: outbox.pending, overdue: outbox.overdue, oldestPendingAgeSeconds: outbox.oldest_pending_s },
    intakeRejections: {
      perWindow: rej,
      perMinute: perWindow((k) => { const r = rejections.find((x) => x.window === k); return r && r.covered_s > 0 ? round2(ratePerMinute(r.count, r.covered_s)) : 0; }),
    },
    fallbackUsed: Object.fromEntries(fallback.map((r) => [r.job_type, { total: r.total, perWindow: pick(r, 'used') }])),
    degradation: {
      ...setting, pendingAdmissions: pending.n, lastSlotAt: pending.last_slot?.toISOString() ?? null,
      resume: resumeEstimate(total.deferred, setting),
    },
  };
  if (opts.historyMinutes) health.history = await history(db, opts.historyMinutes);
  await keepSample(db, health);
  return health;
}

/** The figures worth a trend line that cannot be rebuilt for the past. */
function sampleOf(h: QueueHealth): Record<string, number | null> {
  const tqBacklog = h.taskQueues.reduce<number | null>((a, t) => (t.activity ? (a ?? 0) + t.activity.backlogCount : a), null);
  return {
    active: h.backlog.active, deferred: h.backlog.deferred, oldestWaitingAgeSeconds: h.backlog.oldestWaitingAgeSeconds,
    temporalActivityBacklog: tqBacklog, deadLettersOpen: h.deadLetters.open, outboxPending: h.outbox.pending,
    leaseExpirations1m: h.leaseExpirations.perWindow['1m'], intakeRejections1m: h.intakeRejections.perWindow['1m'],
  };
}

async function keepSample(db: pg.Pool, h: QueueHealth): Promise<void> {
  try {
    if (await q.insertSample(db, sampleOf(h))) await q.pruneSamples(db);
  } catch { /* a trend sample is a nicety; the snapshot itself already succeeded */ }
}

async function history(db: pg.Pool, minutes: number): Promise<HealthHistory> {
  const flows = await q.perMinuteFlows(db, minutes);
  const { n } = await q.unfinishedNow(db);
  const samples = await q.recentSamples(db, minutes);
  const keys = ['active', 'deferred', 'oldestWaitingAgeSeconds', 'temporalActivityBacklog', 'deadLettersOpen', 'outboxPending', 'leaseExpirations1m', 'intakeRejections1m'];
  const byMinute = new Map(samples.map((s) => [s.minute.getTime(), s.figures]));
  const arrivals = flows.map((f) => f.arrivals);
  const completions = flows.map((f) => f.completions);
  return {
    minutes: flows.map((f) => f.minute.toISOString()),
    arrivals, completions,
    unfinished: unfinishedSeries(n, arrivals, completions),
    samples: Object.fromEntries(keys.map((k) => [k, flows.map((f) => byMinute.get(f.minute.getTime())?.[k] ?? null)])),
  };
}


// ---- Prometheus: gauges computed on scrape from the snapshot above ----

type Setter = (labels: Record<string, string>, value: number | null) => void;
const num = (v: number | null | undefined) => (v === null || v === undefined ? 0 : v);

/** Every health metric and how it is read from the snapshot. Names are what ops/alerts.yml refers to. */
/** What a gauge knows besides the snapshot: the registered job types that declare a fallback. */
interface GaugeContext { fallbackTypes: readonly JobType[] }

const HEALTH_METRICS: Array<[name: string, help: string, labels: string[], fill: (h: QueueHealth, set: Setter, c: GaugeContext) => void]> = [
  ['durable_jobs_backlog_jobs', 'Unfinished jobs by type and state (Postgres).', ['job_type', 'state'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) for (const st of ['queued', 'retrying', 'running', 'deferred'] as const) set({ job_type: t, state: st }, j.backlog[st]);
  }],
  ['durable_jobs_backlog_oldest_waiting_age_seconds', 'Longest a job of this type has been waiting for a worker right now (0: none waiting).', ['job_type'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestWaitingAgeSeconds));
  }],
  ['durable_jobs_backlog_oldest_unfinished_age_seconds', 'Age of the oldest admitted, unfinished job of this type.', ['job_type'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestUnfinishedAgeSeconds));
  }],
  ['durable_jobs_deferred_oldest_age_seconds', 'How long the oldest deferred job of this type has been held back.', ['job_type'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) set({ job_type: t }, num(j.backlog.oldestDeferredAgeSeconds));
  }],
  ['durable_jobs_task_queue_backlog', 'Temporal approximate backlog count of the task queue.', ['task_queue', 'task_type'], (h, set) => eachQueue(h, set, (s) => s.backlogCount)],
  ['durable_jobs_task_queue_backlog_age_seconds', 'Temporal approximate backlog age of the task queue.', ['task_queue', 'task_type'], (h, set) => eachQueue(h, set, (s) => s.backlogAgeSeconds)],
  ['durable_jobs_task_queue_dispatch_rate_per_second', 'Temporal tasks dispatched per second.', ['task_queue', 'task_type'], (h, set) => eachQueue(h, set, (s) => s.dispatchRatePerSecond)],
  ['durable_jobs_task_queue_pollers', 'Workers polling the task queue.', ['task_queue', 'task_type'], (h, set) => eachQueue(h, set, (s) => s.pollers)],
  ['durable_jobs_arrivals_per_minute', 'Jobs accepted per minute over the window.', ['job_type', 'window'], (h, set) => eachRate(h, set, (f) => f.arrivalsPerMinute)],
  ['durable_jobs_completions_per_minute', 'Jobs finished (any final state) per minute over the window.', ['job_type', 'window'], (h, set) => eachRate(h, set, (f) => f.completionsPerMinute)],
  ['durable_jobs_net_drain_per_minute', 'Completions minus admitted arrivals per minute; negative: the backlog grows.', ['job_type', 'window'], (h, set) => eachRate(h, set, (f) => f.netDrainPerMinute)],
  ['durable_jobs_recovery_eta_seconds', 'Backlog / net drain over the window; +Inf when it does not shrink, 0 when empty.', ['window'], (h, set) => {
    for (const w of WINDOWS) { const r = h.recoveryByWindow[w.key]; set({ window: w.key }, r.etaSeconds ?? Number.POSITIVE_INFINITY); }
  }],
  ['durable_jobs_lease_expirations', 'Attempts that lost their lease (worker died, heartbeat or start-to-close timeout) detected in the window.', ['job_type', 'window'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) for (const w of WINDOWS) set({ job_type: t, window: w.key }, j.leaseExpirations[w.key]);
  }],
  ['durable_jobs_lease_overdue_attempts', 'Attempts past their start-to-close deadline with no end and no successor (last hour).', [], (h, set) => set({}, h.leaseExpirations.overdue)],
  ['durable_jobs_attempts', 'Recorded attempts by outcome in the window.', ['outcome', 'window'], (h, set) => {
    for (const [o, pw] of Object.entries(h.attempts.byOutcome)) for (const w of WINDOWS) set({ outcome: o, window: w.key }, pw[w.key]);
  }],
  ['durable_jobs_attempts_per_job', 'Attempts per job over jobs finished in the last 15 min.', ['job_type', 'stat'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) { set({ job_type: t, stat: 'avg' }, num(j.attemptsPerJob.avg)); set({ job_type: t, stat: 'max' }, num(j.attemptsPerJob.max)); }
  }],
  ['durable_jobs_queue_time_seconds', 'Queue time (admitted to first started) of jobs finished in the last 15 min.', ['job_type', 'quantile'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) { set({ job_type: t, quantile: '0.5' }, j.queueSeconds.p50); set({ job_type: t, quantile: '0.95' }, j.queueSeconds.p95); }
  }],
  ['durable_jobs_execution_time_seconds', 'Execution time (first started to finished) of jobs finished in the last 15 min.', ['job_type', 'quantile'], (h, set) => {
    for (const [t, j] of Object.entries(h.jobTypes)) { set({ job_type: t, quantile: '0.5' }, j.executionSeconds.p50); set({ job_type: t, quantile: '0.95' }, j.executionSeconds.p95); }
  }],
  ['durable_jobs_reconciliations', 'Effects reconciled with the upstream (a previous attempt was in doubt) in the window.', ['window'], (h, set) => {
    for (const w of WINDOWS) set({ window: w.key }, h.reconciliations.perWindow[w.key]);
  }],
  ['durable_jobs_effects_in_doubt', 'Pending effects that may have reached the upstream unseen.', [], (h, set) => set({}, h.reconciliations.effectsInDoubt)],
  ['durable_jobs_dead_letters_open', 'Open dead letters.', [], (h, set) => set({}, h.deadLetters.open)],
  ['durable_jobs_dead_letters_created', 'Dead letters created in the window.', ['window'], (h, set) => {
    for (const w of WINDOWS) set({ window: w.key }, h.deadLetters.newPerWindow[w.key]);
  }],
  ['durable_jobs_dead_letter_oldest_open_age_seconds', 'Age of the oldest open dead letter (0: none).', [], (h, set) => set({}, num(h.deadLetters.oldestOpenAgeSeconds))],
  ['durable_jobs_outbox_pending', 'Outbox rows not delivered yet.', [], (h, set) => set({}, h.outbox.pending)],
  ['durable_jobs_outbox_overdue', 'Outbox rows past their delivery deadline.', [], (h, set) => set({}, h.outbox.overdue)],
  ['durable_jobs_outbox_oldest_pending_age_seconds', 'Age of the oldest undelivered outbox row (0: none): the outbox lag.', [], (h, set) => set({}, num(h.outbox.oldestPendingAgeSeconds))],
  ['durable_jobs_intake_rejections', 'Submissions answered 503 (nothing persisted) in the window, from the durable per-minute counter.', ['window'], (h, set) => {
    for (const w of WINDOWS) set({ window: w.key }, h.intakeRejections.perWindow[w.key]);
  }],
  ['durable_jobs_degradation_paused', '1 while the priority is paused by the degradation setting.', ['priority'], (h, set) => {
    for (const p of ['high', 'normal', 'low'] as const) set({ priority: p }, h.degradation.pausedPriorities.includes(p) ? 1 : 0);
  }],
  ['durable_jobs_recovery_rate_per_minute', 'Configured admission rate for deferred jobs when they resume.', [], (h, set) => set({}, h.degradation.recoveryRatePerMinute)],
  ['durable_jobs_fallback_used', 'Effects sent to the fallback upstream (an operator\'s recorded decision) by job type, in the window or all time.', ['job_type', 'window'], (h, set) => {
    for (const [t, f] of Object.entries(h.fallbackUsed)) { set({ job_type: t, window: 'all' }, f.total); for (const w of WINDOWS) set({ job_type: t, window: w.key }, f.perWindow[w.key]); }
  }],
  ['durable_jobs_fallback_enabled', '1 while an operator has switched the job type to the fallback upstream.', ['job_type'], (h, set, c) => {
    for (const t of c.fallbackTypes) set({ job_type: t }, h.degradation.fallbackJobTypes.includes(t) ? 1 : 0);
  }],
  ['durable_jobs_admissions_pending', 'Resuming jobs holding a ramp slot not reached yet.', [], (h, set) => set({}, h.degradation.pendingAdmissions)],
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
export function registerHealthMetrics(registry: Registry, deps: HealthDeps & { log: Logger; fallbackTypes: readonly JobType[] }): HealthMetrics {
  let cached: { at: number; p: Promise<QueueHealth> } | undefined;
  const snapshot = () => {
    if (!cached || Date.now() - cached.at > 1_000) {
      cached = { at: Date.now(), p: flushRejections().then(() => collectQueueHealth(deps)) };
      cached.p.catch(() => { cached = undefined; });
    }
    return cached.p;
  };
  new Gauge({
    name: 'durable_jobs_health_up', help: '1 when the health figures could be read from Postgres.', registers: [registry],
    async collect() { this.set(await snapshot().then(() => 1, () => 0)); },
  });
  for (const [name, help, labelNames, fill] of HEALTH_METRICS) {
    new Gauge({
      name, help, labelNames, registers: [registry],
      async collect() {
        this.reset();
        const h = await snapshot().catch(() => undefined);
        if (h) fill(h, (labels, value) => { if (value !== null) this.set(labels, value); }, deps);
      },
    });
  }
  const rejectionsTotal = new Counter({ name: 'durable_jobs_intake_rejections_total', help: 'Submissions this process answered 503 (nothing persisted).', labelNames: ['cause'], registers: [registry] });

  // Minute buckets not written yet (Postgres may be the very reason for the 503): retried on
  // the next rejection or scrape. Their minute is this host's clock, the only figure that is.
  const pending = new Map<string, { minute: Date; cause: string; count: number }>();
  async function flushRejections(): Promise<void> {
    for (const [k, v] of [...pending]) {
      try {
        pending.delete(k);
        await q.addIntakeRejections(deps.pool, v.minute, v.cause, v.count);
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
