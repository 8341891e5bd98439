import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type pg from 'pg';
import {
  formatCount,
  formatDuration,
  formatRate,
  HEADLINE_WINDOW,
  netDrain,
  perWindow,
  ratePerMinute,
  recovery,
  unfinishedSeries,
  type PerWindow,
  type Recovery,
  type WindowKey,
} from '../lib/health.js';
import { getSetting, type DegradationSetting } from '../store/degradation.js';
import { pendingReservations } from '../store/admissions.js';
import { fallbackUsedByType } from '../store/health.js';
import * as q from '../store/health.js';

/**
 * The queue-health snapshot: every figure derived from Postgres rows (database clock) and
 * Temporal's task-queue statistics, never from this process's memory, so every API process
 * reports the same numbers. Used by `GET /v1/admin/queue-health`, `/metrics` and `npm run health`.
 */
export interface HealthDeps {
  pool: pg.Pool;
  temporal?: Client;
  taskQueues: string[];
  /** Each registered job type's task queue: a type whose queue has no poller is named. Default: none named. */
  jobTypeQueues?: Record<string, string>;
}

export interface TaskQueueStats {
  backlogCount: number;
  backlogAgeSeconds: number;
  addRatePerSecond: number;
  dispatchRatePerSecond: number;
  pollers: number;
}
export interface TaskQueueHealth {
  name: string;
  workflow: TaskQueueStats | null;
  activity: TaskQueueStats | null;
  note?: string;
}

export interface Flow {
  arrivalsPerMinute: PerWindow;
  enteredPerMinute: PerWindow;
  completionsPerMinute: PerWindow;
  netDrainPerMinute: PerWindow;
}
export interface Backlog {
  /** Admitted, unfinished jobs: what must complete for the queue to be empty (the ETA's backlog). */
  active: number;
  queued: number;
  retrying: number;
  running: number;
  deferred: number;
  oldestWaitingAgeSeconds: number | null;
  oldestUnfinishedAgeSeconds: number | null;
  oldestDeferredAgeSeconds: number | null;
}
export interface JobTypeHealth {
  backlog: Backlog;
  rates: Flow;
  recovery: Recovery;
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
  /** Job types whose task queue Temporal shows no workflow or activity poller on: their jobs wait at claim. */
  unpolledJobTypes: Array<{ jobType: string; taskQueue: string; words: string }>;
  backlog: Backlog;
  rates: Flow;
  recovery: Recovery;
  recoveryByWindow: PerWindow<Recovery>;
  jobTypes: Record<string, JobTypeHealth>;
  leaseExpirations: { perWindow: PerWindow; overdue: number };
  attempts: { byOutcome: Record<string, PerWindow> };
  reconciliations: { perWindow: PerWindow; effectsInDoubt: number };
  deadLetters: {
    source: 'dead_letters';
    open: number;
    oldestOpenAgeSeconds: number | null;
    newPerWindow: PerWindow;
    growthPerMinute: PerWindow;
  };
  outbox: { pending: number; overdue: number; oldestPendingAgeSeconds: number | null };
  intakeRejections: { perWindow: PerWindow; perMinute: PerWindow };
  /** Effects sent to the fallback upstream by job type (each an operator's recorded decision). */
  fallbackUsed: Record<string, { total: number; perWindow: PerWindow }>;
  degradation: DegradationSetting & {
    pendingAdmissions: number;
    lastSlotAt: string | null;
    resume: { deferred: number; etaSeconds: number; words: string } | null;
  };
  history?: HealthHistory;
}

export interface HealthHistory {
  minutes: string[];
  arrivals: number[];
  completions: number[];
  unfinished: number[];
  /**
   * Per-minute samples of figures that cannot be rebuilt for the past, as the API processes'
   * sampler stored them (services/health-sampler.ts); null where no API process was running.
   */
  samples: Record<string, Array<number | null>>;
}

const zero = (): PerWindow => perWindow(() => 0);
const round2 = (n: number) => Math.round(n * 100) / 100;

function flowOf(arr: PerWindow, ent: PerWindow, done: PerWindow): Flow {
  const rate = (c: PerWindow) => perWindow((k, s) => round2(ratePerMinute(c[k], s)));
  const arrivalsPerMinute = rate(arr);
  const enteredPerMinute = rate(ent);
  const completionsPerMinute = rate(done);
  return {
    arrivalsPerMinute,
    enteredPerMinute,
    completionsPerMinute,
    netDrainPerMinute: perWindow((k) => round2(netDrain(completionsPerMinute[k], enteredPerMinute[k]))),
  };
}

const pick = <P extends string>(row: Record<string, unknown> | undefined, prefix: P): PerWindow =>
  perWindow((k) => Number(row?.[`${prefix}_${k}`] ?? 0));

function longToNumber(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  return Number((v as { toString(): string }).toString());
}

async function describeQueue(temporal: Client, name: string, type: number, deadline?: number): Promise<TaskQueueStats | null> {
  const res = await temporal.connection.withDeadline(deadline ?? Date.now() + 3_000, () =>
    temporal.workflowService.describeTaskQueue({
      namespace: temporal.options.namespace,
      taskQueue: { name },
      taskQueueType: type,
      reportStats: true,
    }),
  );
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

/**
 * Temporal's own view of each task queue (workflow and activity tasks); a failure is reported,
 * never fatal. `deadline` (epoch ms) bounds each call; default 3 s from the call.
 */
export async function taskQueueHealth(
  temporal: Client | undefined,
  names: string[],
  o: { deadline?: number } = {},
): Promise<TaskQueueHealth[]> {
  const T = proto.temporal.api.enums.v1.TaskQueueType;
  return Promise.all(
    names.map(async (name) => {
      if (!temporal) return { name, workflow: null, activity: null, note: 'no Temporal client: figures from Postgres only' };
      try {
        const [workflow, activity] = await Promise.all([
          describeQueue(temporal, name, T.TASK_QUEUE_TYPE_WORKFLOW, o.deadline),
          describeQueue(temporal, name, T.TASK_QUEUE_TYPE_ACTIVITY, o.deadline),
        ]);
        return {
          name,
          workflow,
          activity,
          ...(workflow || activity ? {} : { note: 'the server reports no task-queue stats (before 1.28): backlog from Postgres' }),
        };
      } catch (err) {
        return { name, workflow: null, activity: null, note: `Temporal unavailable: ${(err as Error).message}` };
      }
    }),
  );
}

function backlogOf(r: q.BacklogRow | undefined): Backlog {
  const queued = r?.queued ?? 0;
  const retrying = r?.retrying ?? 0;
  const running = r?.running ?? 0;
  return {
    active: queued + retrying + running,
    queued,
    retrying,
    running,
    deferred: r?.deferred ?? 0,
    oldestWaitingAgeSeconds: r?.oldest_waiting_s ?? null,
    oldestUnfinishedAgeSeconds: r?.oldest_unfinished_s ?? null,
    oldestDeferredAgeSeconds: r?.oldest_deferred_s ?? null,
  };
}

function sumBacklog(rows: q.BacklogRow[]): q.BacklogRow {
  const max = (k: 'oldest_waiting_s' | 'oldest_unfinished_s' | 'oldest_deferred_s') => {
    const v = rows.map((r) => r[k]).filter((x): x is number => x !== null);
    return v.length ? Math.max(...v) : null;
  };
  const sum = (k: 'queued' | 'retrying' | 'running' | 'deferred') => rows.reduce((a, r) => a + r[k], 0);
  return {
    job_type: '*',
    queued: sum('queued'),
    retrying: sum('retrying'),
    running: sum('running'),
    deferred: sum('deferred'),
    oldest_waiting_s: max('oldest_waiting_s'),
    oldest_unfinished_s: max('oldest_unfinished_s'),
    oldest_deferred_s: max('oldest_deferred_s'),
  };
}

/** Deferred jobs come back at the recovery rate once their priority is no longer paused. */
function resumeEstimate(deferred: number, s: DegradationSetting): { deferred: number; etaSeconds: number; words: string } | null {
  if (deferred === 0) return null;
  const etaSeconds = (deferred / s.recoveryRatePerMinute) * 60;
  const when = s.pausedPriorities.length > 0 ? `once ${s.pausedPriorities.join(', ')} is resumed` : 'resuming now';
  return {
    deferred,
    etaSeconds,
    words: `${formatCount(deferred)} deferred, ${when} at ${formatRate(s.recoveryRatePerMinute)}: ${formatDuration(etaSeconds)}`,
  };
}

const addWindows = (a: PerWindow, b: PerWindow): PerWindow => perWindow((k) => a[k] + b[k]);

/** The types whose queue has stats but no poller of one kind (no stats: Temporal was not asked, nothing is claimed). */
export function unpolledJobTypes(
  queues: readonly TaskQueueHealth[],
  jobTypeQueues: Record<string, string>,
): QueueHealth['unpolledJobTypes'] {
  const out: QueueHealth['unpolledJobTypes'] = [];
  for (const [jobType, taskQueue] of Object.entries(jobTypeQueues)) {
    const q = queues.find((x) => x.name === taskQueue);
    if (!q || (!q.workflow && !q.activity)) continue;
    if ((q.workflow?.pollers ?? 1) > 0 && (q.activity?.pollers ?? 1) > 0) continue;
    out.push({ jobType, taskQueue, words: `no worker polls task queue ${taskQueue} for job type ${jobType}` });
  }
  return out;
}

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
  const dl = await q.deadLetterFigures(db);
  const outbox = await q.outboxFigures(db);
  const rejections = await q.intakeRejections(db);
  const setting = await getSetting(db);
  const pending = await pendingReservations(db);
  const fallback = await fallbackUsedByType(db);

  const types = [...new Set([...backlog, ...arrivals, ...completions, ...admitted, ...leases].map((r) => r.job_type))].sort();
  const jobTypes: Record<string, JobTypeHealth> = {};
  let arrAll = zero();
  let entAll = zero();
  let doneAll = zero();
  let expAll = zero();
  for (const t of types) {
    const a = arrivals.find((r) => r.job_type === t) as Record<string, unknown> | undefined;
    const c = completions.find((r) => r.job_type === t);
    const arr = pick(a, 'arr');
    const ent = addWindows(
      pick(a, 'ent'),
      pick(
        admitted.find((r) => r.job_type === t),
        'adm',
      ),
    );
    const done = pick(c as Record<string, unknown> | undefined, 'done');
    const exp = pick(
      leases.find((r) => r.job_type === t),
      'exp',
    );
    arrAll = addWindows(arrAll, arr);
    entAll = addWindows(entAll, ent);
    doneAll = addWindows(doneAll, done);
    expAll = addWindows(expAll, exp);
    const b = backlogOf(backlog.find((r) => r.job_type === t));
    const rates = flowOf(arr, ent, done);
    jobTypes[t] = {
      backlog: b,
      rates,
      recovery: recovery(b.active, rates.netDrainPerMinute[HEADLINE_WINDOW]),
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
    unpolledJobTypes: unpolledJobTypes(await tq, deps.jobTypeQueues ?? {}),
    backlog: total,
    rates,
    recovery: recovery(total.active, rates.netDrainPerMinute[HEADLINE_WINDOW]),
    recoveryByWindow: perWindow((k) => recovery(total.active, rates.netDrainPerMinute[k])),
    jobTypes,
    leaseExpirations: { perWindow: expAll, overdue },
    attempts: { byOutcome },
    reconciliations: { perWindow: byOutcome.reconciled ?? zero(), effectsInDoubt: inDoubt },
    deadLetters: {
      source: 'dead_letters',
      open: dl.open,
      oldestOpenAgeSeconds: dl.oldest_open_s,
      newPerWindow: dlNew,
      growthPerMinute: perWindow((k, s) => round2(ratePerMinute(dlNew[k], s))),
    },
    outbox: { pending: outbox.pending, overdue: outbox.overdue, oldestPendingAgeSeconds: outbox.oldest_pending_s },
    intakeRejections: {
      perWindow: rej,
      perMinute: perWindow((k) => {
        const r = rejections.find((x) => x.window === k);
        return r && r.covered_s > 0 ? round2(ratePerMinute(r.count, r.covered_s)) : 0;
      }),
    },
    fallbackUsed: Object.fromEntries(fallback.map((r) => [r.job_type, { total: r.total, perWindow: pick(r, 'used') }])),
    degradation: {
      ...setting,
      pendingAdmissions: pending.n,
      lastSlotAt: pending.last_slot?.toISOString() ?? null,
      resume: resumeEstimate(total.deferred, setting),
    },
  };
  if (opts.historyMinutes) health.history = await history(db, opts.historyMinutes);
  return health;
}

/**
 * The figures worth a trend line that cannot be rebuilt for the past: what the API's sampler
 * (services/health-sampler.ts) stores every few seconds, and `history.samples` reads back.
 */
export function sampleOf(h: QueueHealth): Record<string, number | null> {
  const tqBacklog = h.taskQueues.reduce<number | null>((a, t) => (t.activity ? (a ?? 0) + t.activity.backlogCount : a), null);
  return {
    active: h.backlog.active,
    deferred: h.backlog.deferred,
    oldestWaitingAgeSeconds: h.backlog.oldestWaitingAgeSeconds,
    temporalActivityBacklog: tqBacklog,
    deadLettersOpen: h.deadLetters.open,
    outboxPending: h.outbox.pending,
    leaseExpirations1m: h.leaseExpirations.perWindow['1m'],
    intakeRejections1m: h.intakeRejections.perWindow['1m'],
    recoveryEtaSeconds: h.recovery.etaSeconds,
  };
}
const SAMPLED = [
  'active',
  'deferred',
  'oldestWaitingAgeSeconds',
  'temporalActivityBacklog',
  'deadLettersOpen',
  'outboxPending',
  'leaseExpirations1m',
  'intakeRejections1m',
  'recoveryEtaSeconds',
];

async function history(db: pg.Pool, minutes: number): Promise<HealthHistory> {
  const flows = await q.perMinuteFlows(db, minutes);
  const { n } = await q.unfinishedNow(db);
  const samples = await q.recentSamples(db, minutes);
  const byMinute = new Map(samples.map((s) => [s.minute.getTime(), s.figures]));
  const arrivals = flows.map((f) => f.arrivals);
  const completions = flows.map((f) => f.completions);
  return {
    minutes: flows.map((f) => f.minute.toISOString()),
    arrivals,
    completions,
    unfinished: unfinishedSeries(n, arrivals, completions),
    samples: Object.fromEntries(SAMPLED.map((k) => [k, flows.map((f) => byMinute.get(f.minute.getTime())?.[k] ?? null)])),
  };
}

// ---- Prometheus: gauges computed on scrape from the snapshot above ----
