import { WINDOWS } from '../lib/health.js';
import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

/**
 * The health figures' SQL, one function per statement. Every window is measured against the
 * database clock (`now()`), so two API processes on different hosts agree.
 */
/** `count(*) FILTER (WHERE <col> > now() - 60 s) AS <prefix>_1m, ...` for every window. */
const windowCounts = (col: string, prefix: string, also = 'true') =>
  WINDOWS.map(
    (w) => `count(*) FILTER (WHERE ${also} AND ${col} > now() - interval '${w.seconds} seconds')::int AS ${prefix}_${w.key}`,
  ).join(',\n  ');
const LONGEST = `interval '${WINDOWS[WINDOWS.length - 1]!.seconds} seconds'`;

export type WindowRow<P extends string> = { [K in `${P}_${(typeof WINDOWS)[number]['key']}`]: number };

export interface BacklogRow {
  job_type: string;
  queued: number;
  retrying: number;
  running: number;
  deferred: number;
  /** Longest a job has been waiting for a worker right now (not counting deliberate waits). */
  oldest_waiting_s: number | null;
  oldest_unfinished_s: number | null;
  oldest_deferred_s: number | null;
}

/**
 * Unfinished jobs by state. A queued job waits since it was created (or admitted after a
 * deferral, or put back to wait for a slot); a retrying job only once its backoff is over:
 * a deliberate wait is not backlog age. A delayed job (`run_at`, migration 0025) is no backlog
 * before its time (the API calls it `scheduled`) and waits from its time on.
 */
/** Not a delayed job before its time (GREATEST ignores a NULL `run_at`). */
const DUE = `(run_at IS NULL OR run_at <= now())`;

export async function backlogByType(db: Db): Promise<BacklogRow[]> {
  const r = await db.query<BacklogRow>(`
    SELECT job_type,
      count(*) FILTER (WHERE status = 'queued' AND ${DUE})::int AS queued,
      count(*) FILTER (WHERE status = 'retrying')::int AS retrying,
      count(*) FILTER (WHERE status = 'running')::int AS running,
      count(*) FILTER (WHERE status = 'deferred')::int AS deferred,
      extract(epoch FROM now() - min(CASE
        WHEN status = 'queued' AND first_started_at IS NULL AND ${DUE} THEN coalesce(admitted_at, greatest(created_at, run_at))
        WHEN status = 'queued' THEN updated_at
        WHEN status = 'retrying' AND next_attempt_at <= now() THEN next_attempt_at END))::float8 AS oldest_waiting_s,
      extract(epoch FROM now() - min(greatest(created_at, run_at)) FILTER (WHERE status <> 'deferred' AND ${DUE}))::float8 AS oldest_unfinished_s,
      extract(epoch FROM now() - min(deferred_at) FILTER (WHERE status = 'deferred'))::float8 AS oldest_deferred_s
    FROM job_intents
    WHERE status IN ('queued', 'retrying', 'running', 'deferred')
    GROUP BY job_type`);
  return r.rows;
}

/**
 * Arrivals per window: every accepted job (`arr_*`), and those that entered the active
 * backlog at once (`ent_*`: not held back by the degradation gate; the held-back ones enter
 * when the admission ledger admits them, see `admittedByWindow`).
 */
export async function arrivalsByType(db: Db): Promise<Array<{ job_type: string } & WindowRow<'arr'> & WindowRow<'ent'>>> {
  const r = await db.query(`
    SELECT job_type,
      ${windowCounts('created_at', 'arr')},
      ${windowCounts('created_at', 'ent', 'deferred_at IS NULL')}
    FROM job_intents WHERE created_at > now() - ${LONGEST}
    GROUP BY job_type`);
  return r.rows;
}

export interface CompletionRow extends WindowRow<'done'> {
  job_type: string;
  succeeded_15m: number;
  dead_lettered_15m: number;
  cancelled_15m: number;
  attempts_avg: number | null;
  attempts_max: number | null;
  /** After admission: time deferred by the operator's pause is not queue time. */
  queue_p50_s: number | null;
  queue_p95_s: number | null;
  exec_p50_s: number | null;
  exec_p95_s: number | null;
}

/** Jobs that finished (any terminal state) per window, with attempts and time split for the longest window. */
/** Execution seconds: the attempts' spans summed (slot waits and back-offs excluded); older rows: first start → finish. */
const EXECUTION_S = `coalesce(execution_ms / 1000.0, extract(epoch FROM finished_at - first_started_at))`;

export async function completionsByType(db: Db): Promise<CompletionRow[]> {
  const r = await db.query<CompletionRow>(`
    SELECT job_type,
      ${windowCounts('finished_at', 'done')},
      count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded_15m,
      count(*) FILTER (WHERE status = 'dead_lettered')::int AS dead_lettered_15m,
      count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled_15m,
      avg(attempts) FILTER (WHERE attempts > 0)::float8 AS attempts_avg,
      max(attempts)::int AS attempts_max,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM first_started_at - coalesce(admitted_at, greatest(created_at, run_at)))) FILTER (WHERE first_started_at IS NOT NULL) AS queue_p50_s,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM first_started_at - coalesce(admitted_at, greatest(created_at, run_at)))) FILTER (WHERE first_started_at IS NOT NULL) AS queue_p95_s,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY ${EXECUTION_S}) FILTER (WHERE first_started_at IS NOT NULL) AS exec_p50_s,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY ${EXECUTION_S}) FILTER (WHERE first_started_at IS NOT NULL) AS exec_p95_s
    FROM job_intents WHERE finished_at > now() - ${LONGEST}
    GROUP BY job_type`);
  return r.rows;
}

/** Deferred jobs the admission ledger let through, per window: they enter the active backlog then. */
export async function admittedByType(db: Db): Promise<Array<{ job_type: string } & WindowRow<'adm'>>> {
  const r = await db.query(`
    SELECT coalesce(i.job_type, 'other') AS job_type, ${windowCounts('a.admitted_at', 'adm')}
    FROM admissions a LEFT JOIN job_intents i ON i.job_id = a.job_id
    WHERE a.admitted_at > now() - ${LONGEST}
    GROUP BY 1`);
  return r.rows;
}

/** Attempt outcomes per window (retryable failures, reconciliations, ...), from `job_attempts`. */
export async function attemptOutcomes(db: Db): Promise<Array<{ outcome: string } & WindowRow<'n'>>> {
  const r = await db.query(`
    SELECT outcome, ${windowCounts('finished_at', 'n')}
    FROM job_attempts WHERE finished_at > now() - ${LONGEST}
    GROUP BY outcome`);
  return r.rows;
}

/** Effects that may have reached the upstream without us seeing the answer: they will reconcile. */
export async function effectsInDoubt(db: Db): Promise<number> {
  const r = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM effects WHERE state = 'pending' AND in_doubt`);
  return r.rows[0]!.n;
}

/** Lease expirations per window, by job type (detected by the next attempt). */
export async function leaseExpirationsByType(db: Db): Promise<Array<{ job_type: string } & WindowRow<'exp'>>> {
  const r = await db.query(`
    SELECT coalesce(i.job_type, 'other') AS job_type, ${windowCounts('l.expired_detected_at', 'exp')}
    FROM activity_leases l LEFT JOIN job_intents i ON i.job_id = l.job_id
    WHERE l.expired_detected_at > now() - ${LONGEST}
    GROUP BY 1`);
  return r.rows;
}

/**
 * Attempts past their start-to-close deadline without an end and without a successor (the
 * last attempt's worker died, or a stuck one is still running), over the last hour.
 */
export async function overdueLeases(db: Db): Promise<number> {
  const r = await db.query<{ n: number }>(`
    SELECT count(*)::int AS n FROM activity_leases
     WHERE ended_at IS NULL AND outcome IS NULL AND deadline_at < now() AND deadline_at > now() - interval '1 hour'`);
  return r.rows[0]!.n;
}

export type DeadLetterRow = { open: number; oldest_open_s: number | null } & WindowRow<'new'>;

/** Dead letters from their own table (schema 0003): open ones, the oldest open, growth per window. */
export async function deadLetterFigures(db: Db): Promise<DeadLetterRow> {
  const r = await db.query<DeadLetterRow>(`
    SELECT count(*) FILTER (WHERE state = 'open')::int AS open,
      extract(epoch FROM now() - min(created_at) FILTER (WHERE state = 'open'))::float8 AS oldest_open_s,
      ${windowCounts('created_at', 'new')}
    FROM dead_letters WHERE state = 'open' OR created_at > now() - ${LONGEST}`);
  return r.rows[0]!;
}

export interface OutboxRow {
  pending: number;
  overdue: number;
  oldest_pending_s: number | null;
}

/** Outbox lag: undelivered rows, the oldest one's age, and those past their delivery deadline. */
export async function outboxFigures(db: Db): Promise<OutboxRow> {
  const r = await db.query<OutboxRow>(`
    SELECT count(*)::int AS pending, count(*) FILTER (WHERE deliver_by < now())::int AS overdue,
      extract(epoch FROM now() - min(created_at))::float8 AS oldest_pending_s
    FROM outbox WHERE state = 'pending'`);
  return r.rows[0]!;
}

/**
 * Intake rejections per window from the per-minute counters: the sum over the buckets the
 * window touches, and the seconds those buckets cover (so the rate is not inflated).
 */
export async function intakeRejections(db: Db): Promise<Array<{ window: string; count: number; covered_s: number }>> {
  const r = await db.query(`
    SELECT w.key AS window, coalesce(sum(x.count), 0)::int AS count,
      extract(epoch FROM now() - date_trunc('minute', now() - w.secs * interval '1 second'))::float8 AS covered_s
    FROM (VALUES ${WINDOWS.map((w) => `('${w.key}', ${w.seconds})`).join(', ')}) AS w(key, secs)
    LEFT JOIN intake_rejections x ON x.minute >= date_trunc('minute', now() - w.secs * interval '1 second')
    GROUP BY w.key, w.secs`);
  return r.rows;
}

/** Adds rejections to their minute's counter (the minute they happened, even if written later). */
export async function addIntakeRejections(db: Db, minute: Date, cause: string, count: number): Promise<void> {
  await db.query(
    `INSERT INTO intake_rejections (minute, cause, count) VALUES (date_trunc('minute', $1::timestamptz), $2, $3)
     ON CONFLICT (minute, cause) DO UPDATE SET count = intake_rejections.count + EXCLUDED.count`,
    [minute, cause, count],
  );
}

/** Unfinished jobs now: the anchor from which the per-minute trend of the backlog is rebuilt. */
export async function unfinishedNow(db: Db): Promise<{ n: number; now: Date }> {
  const r = await db.query<{ n: number; now: Date }>(`SELECT count(*)::int AS n, now() AS now FROM job_intents WHERE finished_at IS NULL`);
  return r.rows[0]!;
}

/** Arrivals and completions per minute for the last `minutes` minutes (the current one partial). */
export async function perMinuteFlows(db: Db, minutes: number): Promise<Array<{ minute: Date; arrivals: number; completions: number }>> {
  const r = await db.query(
    `
    WITH m AS (
      SELECT generate_series(date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute', date_trunc('minute', now()), interval '1 minute') AS minute
    ), a AS (
      SELECT date_trunc('minute', created_at) AS minute, count(*)::int AS n FROM job_intents
       WHERE created_at >= date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute' GROUP BY 1
    ), c AS (
      SELECT date_trunc('minute', finished_at) AS minute, count(*)::int AS n FROM job_intents
       WHERE finished_at >= date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute' GROUP BY 1
    )
    SELECT m.minute, coalesce(a.n, 0) AS arrivals, coalesce(c.n, 0) AS completions
      FROM m LEFT JOIN a USING (minute) LEFT JOIN c USING (minute) ORDER BY m.minute`,
    [minutes],
  );
  return r.rows;
}

/**
 * One sample per minute (the key is the database's minute): the latest write of the minute
 * wins, so the minute's point is as fresh as the last sampler tick (services/health-sampler.ts),
 * whichever API process wrote it. True when the write opened a new minute.
 */
export async function writeSample(db: Db, figures: Record<string, number | null>): Promise<boolean> {
  const r = await db.query<{ opened: boolean }>(
    `INSERT INTO health_samples (minute, figures) VALUES (date_trunc('minute', now()), $1)
     ON CONFLICT (minute) DO UPDATE SET figures = EXCLUDED.figures
     RETURNING (xmax = 0) AS opened`,
    [JSON.stringify(figures)],
  );
  return r.rows[0]?.opened === true;
}

export async function pruneSamples(db: Db): Promise<void> {
  await db.query(`DELETE FROM health_samples WHERE minute < now() - interval '1 day'`);
}

export async function recentSamples(db: Db, minutes: number): Promise<Array<{ minute: Date; figures: Record<string, number | null> }>> {
  const r = await db.query(
    `SELECT minute, figures FROM health_samples WHERE minute > date_trunc('minute', now()) - $1::int * interval '1 minute' ORDER BY minute`,
    [minutes],
  );
  return r.rows;
}

/** Effects sent to the fallback upstream, by job type: in each window (by last attempt) and all time. */
export async function fallbackUsedByType(db: Db): Promise<Array<{ job_type: string; total: number } & Record<string, number | string>>> {
  const windows = WINDOWS.map(
    (w) => `count(*) FILTER (WHERE e.last_attempt_at > now() - interval '${w.seconds} seconds')::int AS used_${w.key}`,
  ).join(', ');
  const r = await db.query(
    `SELECT coalesce(i.job_type, 'other') AS job_type, count(*)::int AS total, ${windows}
       FROM effects e LEFT JOIN job_intents i ON i.job_id = e.job_id
      WHERE e.upstream = 'fallback'
      GROUP BY 1`,
  );
  return r.rows;
}

// ---- retention ----

/** One batch of the retention cleanup: health samples older than `days`. */
export function deleteExpiredSamples(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'health_samples', age: 'minute' }, days, limit);
}

/** One batch of the retention cleanup: per-minute intake-rejection counters older than `days`. */
export function deleteExpiredRejections(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'intake_rejections', age: 'minute' }, days, limit);
}
