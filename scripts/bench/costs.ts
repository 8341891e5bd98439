// What one job costs the systems around it, and the capacity table derived from it.
//  - Temporal: history events and actions, read from the workflow histories (actions counted as
//    Temporal Cloud bills them: the start, each activity scheduled and each retry, timers, search
//    attribute upserts, signals, child workflows, updates, side effects / local activity markers;
//    heartbeats are not in the history and are not counted).
//  - Postgres: commits from pg_stat_database, round trips and write transactions counted at the
//    client (pg-probe.ts), WAL bytes from pg_current_wal_lsn().
//  - Upstream: effects the simulator applied.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type pg from 'pg';
import { pool } from './stats.js';

export interface HistoryCost {
  events: number;
  actions: number;
  activityTasks: number;
  workflowTasks: number;
}

const ACTION_EVENTS = new Set([
  'ActivityTaskScheduled',
  'TimerStarted',
  'UpsertWorkflowSearchAttributes',
  'WorkflowPropertiesModified',
  'SignalExternalWorkflowExecutionInitiated',
  'WorkflowExecutionSignaled',
  'StartChildWorkflowExecutionInitiated',
  'WorkflowExecutionUpdateAccepted',
  'MarkerRecorded',
  'RequestCancelExternalWorkflowExecutionInitiated',
]);

function eventName(type: unknown): string {
  // The SDK decodes `eventType` as the enum's number (or its name, on some paths).
  const s = typeof type === 'number' ? (proto.temporal.api.enums.v1.EventType[type] ?? String(type)) : String(type);
  return s
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

/** Mean cost per workflow over `ids` (at most `sample` of them, the first ones). */
export async function historyCost(client: Client, ids: string[], sample: number): Promise<HistoryCost> {
  const pick = ids.slice(0, sample);
  const per = await pool(pick.length, 4, async (i) => {
    const h = await client.workflow.getHandle(pick[i]!).fetchHistory();
    const c: HistoryCost = { events: 0, actions: 1, activityTasks: 0, workflowTasks: 0 };
    for (const e of h.events ?? []) {
      c.events++;
      const name = eventName(e.eventType);
      // A patch marker (`patched()`) is bookkeeping of the SDK, not a billed action; a local activity's marker is.
      const patchMarker = name === 'MarkerRecorded' && e.markerRecordedEventAttributes?.markerName === 'core_patch';
      if (ACTION_EVENTS.has(name) && !patchMarker) c.actions++;
      if (name === 'ActivityTaskStarted') {
        c.activityTasks++;
        c.actions += Math.max(0, (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
      }
      if (name === 'WorkflowTaskCompleted') c.workflowTasks++;
    }
    return c;
  });
  const mean = (k: keyof HistoryCost) => per.reduce((a, c) => a + c[k], 0) / Math.max(per.length, 1);
  return { events: mean('events'), actions: mean('actions'), activityTasks: mean('activityTasks'), workflowTasks: mean('workflowTasks') };
}

export interface PgServerCounters {
  commits: number;
  temporalCommits: number;
  walBytes: number;
}

/** Commits of the bench's database, of temporal-server's databases (production kind), and the cluster's WAL position. */
export async function pgServerCounters(p: pg.Pool, temporalDbs: string[], settle = true): Promise<PgServerCounters> {
  // Other backends publish their counters at most about once a second.
  if (settle) await new Promise((r) => setTimeout(r, 1_100));
  const r = await p.query<{ c: string; t: string; wal: string }>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS c,
            (SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = ANY($1::text[]))::text AS t,
            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal`,
    [temporalDbs],
  );
  return { commits: Number(r.rows[0]!.c), temporalCommits: Number(r.rows[0]!.t), walBytes: Number(r.rows[0]!.wal) };
}

/** Per job, from the summarize side of the throughput measurement (medians over repeats). */
export interface PerJob {
  jobsPerSec: number;
  pgCommits: number;
  temporalPgCommits: number;
  roundTrips: number;
  walBytes: number;
  temporalActions: number;
  historyEvents: number;
  upstreamCalls: number;
  cpuSec: { worker: number | null; api: number | null; temporal: number | null; postgres: number | null };
}

const TARGET_UTILISATION = 0.7;

/**
 * Sizing for 10, 100 and 1,000 jobs/s from the measured per-job costs: Postgres commits/s and
 * connections, Temporal actions/s, worker and API processes (each Node process uses at most one
 * core; sized to 70 % of it from the CPU seconds per job). Linear extrapolation from one
 * machine: it says what to provision, not that one Postgres or cluster reaches it.
 */
export function capacityTable(j: PerJob, poolMax: number, temporalKind: string): string {
  const procs = (rate: number, cpu: number | null) => (cpu === null ? null : Math.max(1, Math.ceil((rate * cpu) / TARGET_UTILISATION)));
  const f = (n: number | null) => (n === null ? '?' : n >= 100 || Number.isInteger(n) ? Math.round(n).toLocaleString('en') : n.toFixed(1));
  const temporalPg = j.temporalPgCommits > 0;
  const lines = [
    `Per job (measured on the ${temporalKind} server in this run): ${j.pgCommits.toFixed(1)} Postgres commits${j.temporalPgCommits > 0 ? ` (+ ${j.temporalPgCommits.toFixed(1)} by temporal-server on Postgres)` : ''}, ` +
      `${j.roundTrips.toFixed(1)} round trips, ${(j.walBytes / 1024).toFixed(1)} KB of WAL, ${j.temporalActions.toFixed(1)} Temporal actions, ` +
      `${j.historyEvents.toFixed(1)} history events, ${j.upstreamCalls.toFixed(2)} upstream calls; CPU ${fmtMs(j.cpuSec.worker)} worker, ` +
      `${fmtMs(j.cpuSec.api)} API/submitter, ${fmtMs(j.cpuSec.temporal)} Temporal server, ${fmtMs(j.cpuSec.postgres)} Postgres.`,
    '',
    `| jobs/s | Postgres commits/s (ours) |${temporalPg ? ' Postgres commits/s (temporal-server) |' : ''} Postgres connections (ours) | Temporal actions/s | history events/s | WAL MB/s | worker processes | API processes |`,
    `| --- | --- |${temporalPg ? ' --- |' : ''} --- | --- | --- | --- | --- | --- |`,
  ];
  for (const rate of [10, 100, 1_000]) {
    const workers = procs(rate, j.cpuSec.worker);
    const apis = procs(rate, j.cpuSec.api);
    const conns = workers === null || apis === null ? null : (workers + apis) * poolMax;
    lines.push(
      `| ${rate.toLocaleString('en')} | ${f(rate * j.pgCommits)} |${temporalPg ? ` ${f(rate * j.temporalPgCommits)} |` : ''} ${f(conns)} (${poolMax} per process) | ${f(rate * j.temporalActions)} | ${f(rate * j.historyEvents)} | ${((rate * j.walBytes) / 2 ** 20).toFixed(2)} | ${f(workers)} | ${f(apis)} |`,
    );
  }
  lines.push(
    '',
    `Processes are sized to ${TARGET_UTILISATION * 100} % of one core each from the CPU seconds per job; connections are every process's pool at its maximum (put PgBouncer in front beyond a few hundred). ` +
      'Temporal actions exclude heartbeats (not in the history). Linear extrapolation from one machine: it says what to provision, not that one Postgres or one cluster reaches it.',
  );
  return lines.join('\n');
}

function fmtMs(s: number | null): string {
  return s === null ? '? ms' : `${(s * 1000).toFixed(1)} ms`;
}
