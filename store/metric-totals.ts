import type { Db } from '../lib/db.js';

/**
 * Cumulative counters and histograms derived from durable rows (schema 0013). This file
 * owns `metric_totals` and `metric_checkpoint`: the totals up to the checkpoint are stored,
 * the rows after it are counted at read time through their timestamp indexes, so a scrape
 * never scans a whole growing table and every API process reads the same truth.
 */

/** Histogram upper bounds in seconds (queue and execution time); `+Inf` is added. */
export const TIME_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600] as const;

/**
 * The cumulative figures, exported as gauges (the same value in every API process: max() across
 * processes, `increase()`/`delta()` over time); `_recorded`, not `_total`, which names the
 * per-process counters (docs/operating.md "How to aggregate each series"; schema/0047 renamed
 * the stored totals).
 */
export const TOTAL_METRICS = {
  accepted: 'durable_jobs_jobs_accepted_recorded',
  completed: 'durable_jobs_jobs_completed_recorded',
  attempts: 'durable_jobs_attempts_recorded',
  reconciliations: 'durable_jobs_reconciliations_recorded',
  deadLetters: 'durable_jobs_dead_letters_created_recorded',
  leaseExpirations: 'durable_jobs_lease_expirations_recorded',
  scanRepairs: 'durable_jobs_scan_repairs_recorded',
} as const;

/** The compensation scan's repair kinds (metric label) and the `scan_runs` column that counts each. */
export const SCAN_REPAIR_KINDS = {
  missed_window: 'windows_filled',
  intent_started: 'intents_started',
  outbox_redelivered: 'outbox_redelivered',
  effect_reconciled: 'effects_reconciled',
  effect_not_applied: 'effects_not_applied',
  replay_started: 'replays_started',
  replay_finished: 'replays_finished',
  webhook_resignalled: 'webhooks_resignalled',
  error: 'errors',
} as const;
const SCAN_KINDS_SQL = Object.entries(SCAN_REPAIR_KINDS)
  .map(([kind, col]) => `('${kind}', s.${col})`)
  .join(', ');

export const HISTOGRAMS = {
  queue: 'durable_jobs_job_queue_time_seconds',
  execution: 'durable_jobs_job_execution_time_seconds',
} as const;

export interface TotalRow {
  metric: string;
  labels: Record<string, string>;
  value: number;
}

/** Queue time after admission (a deferral is not queue time) and execution time, as in the health gauges. */
const QUEUE_S = `greatest(0, extract(epoch FROM first_started_at - coalesce(admitted_at, created_at)))::float8`;
const EXECUTION_S = `greatest(0, coalesce(execution_ms / 1000.0, extract(epoch FROM finished_at - first_started_at)))::float8`;
const BUCKETS_SQL = `(VALUES ${[...TIME_BUCKETS.map((b) => `('${b}', ${b}::float8)`), `('+Inf', 'infinity'::float8)`].join(', ')}) AS b(le, v)`;

/**
 * Every series' increase over rows stamped in (lo, hi]: `lo` and `hi` are SQL expressions.
 * Each part filters on an indexed timestamp: job_intents.created_at, job_intents.finished_at,
 * job_attempts.finished_at, dead_letters (state, created_at), activity_leases.expired_detected_at,
 * scan_runs.finished_at (so retention pruning old scan runs never makes the repair counter drop).
 */
function deltaSql(lo: string, hi: string): string {
  const within = (col: string) => `${col} > ${lo} AND ${col} <= ${hi}`;
  const histogram = (name: string, value: string) => `
    SELECT '${name}_bucket', jsonb_build_object('job_type', job_type, 'le', b.le), count(*) FILTER (WHERE x.s <= b.v)::float8
      FROM (SELECT job_type, ${value} AS s FROM job_intents WHERE ${within('finished_at')} AND first_started_at IS NOT NULL) x
     CROSS JOIN ${BUCKETS_SQL} GROUP BY job_type, b.le
    UNION ALL
    SELECT '${name}_sum', jsonb_build_object('job_type', job_type), sum(${value})
      FROM job_intents WHERE ${within('finished_at')} AND first_started_at IS NOT NULL GROUP BY job_type
    UNION ALL
    SELECT '${name}_count', jsonb_build_object('job_type', job_type), count(*)::float8
      FROM job_intents WHERE ${within('finished_at')} AND first_started_at IS NOT NULL GROUP BY job_type`;
  return `
    SELECT '${TOTAL_METRICS.accepted}' AS metric, jsonb_build_object('job_type', job_type) AS labels, count(*)::float8 AS value
      FROM job_intents WHERE ${within('created_at')} GROUP BY job_type
    UNION ALL
    SELECT '${TOTAL_METRICS.completed}', jsonb_build_object('job_type', job_type, 'outcome', status), count(*)::float8
      FROM job_intents WHERE ${within('finished_at')} GROUP BY job_type, status
    UNION ALL
    SELECT '${TOTAL_METRICS.attempts}', jsonb_build_object('job_type', coalesce(i.job_type, 'other'), 'outcome', a.outcome, 'error_class', coalesce(a.error_class, 'none')), count(*)::float8
      FROM job_attempts a LEFT JOIN job_intents i ON i.job_id = a.job_id WHERE ${within('a.finished_at')} GROUP BY 2
    UNION ALL
    SELECT '${TOTAL_METRICS.reconciliations}', jsonb_build_object('job_type', coalesce(i.job_type, 'other')), count(*)::float8
      FROM job_attempts a LEFT JOIN job_intents i ON i.job_id = a.job_id WHERE ${within('a.finished_at')} AND a.outcome = 'reconciled' GROUP BY 2
    UNION ALL
    SELECT '${TOTAL_METRICS.deadLetters}', jsonb_build_object('job_type', job_type), count(*)::float8
      FROM dead_letters WHERE state IN ('open', 'replaying', 'replayed', 'discarded') AND ${within('created_at')} GROUP BY 2
    UNION ALL
    SELECT '${TOTAL_METRICS.leaseExpirations}', jsonb_build_object('job_type', coalesce(i.job_type, 'other')), count(*)::float8
      FROM activity_leases l LEFT JOIN job_intents i ON i.job_id = l.job_id WHERE ${within('l.expired_detected_at')} GROUP BY 2
    UNION ALL
    SELECT '${TOTAL_METRICS.scanRepairs}', jsonb_build_object('kind', k.kind), sum(k.n)::float8
      FROM scan_runs s CROSS JOIN LATERAL (VALUES ${SCAN_KINDS_SQL}) AS k(kind, n) WHERE ${within('s.finished_at')} GROUP BY 2
    UNION ALL ${histogram(HISTOGRAMS.queue, QUEUE_S)}
    UNION ALL ${histogram(HISTOGRAMS.execution, EXECUTION_S)}`;
}

const CHECKPOINT = `(SELECT through FROM metric_checkpoint WHERE id = 1)`;

/** Every series' total: the stored totals plus the rows after the checkpoint, in one statement (one snapshot). */
export async function readTotals(db: Db): Promise<TotalRow[]> {
  const r = await db.query<{ metric: string; labels: Record<string, string>; value: number }>(`
    SELECT metric, labels, sum(value)::float8 AS value FROM (
      SELECT metric, labels, value FROM metric_totals
      UNION ALL (${deltaSql(CHECKPOINT, `'infinity'::timestamptz`)})
    ) d GROUP BY metric, labels ORDER BY metric`);
  return r.rows;
}

export interface AdvanceOptions {
  /** Do nothing if the checkpoint moved less than this long ago (default 60 s). */
  minIntervalSeconds?: number;
  /** Keep the checkpoint at least this far behind now() (default 30 s). */
  lagSeconds?: number;
  /** Never keep it further behind than this for an open transaction (default 600 s). */
  maxLagSeconds?: number;
}

/**
 * Moves the checkpoint forward: folds the rows stamped in (through, target] into the stored
 * totals. `target` is just before the oldest transaction still open (its rows, stamped with
 * its now() or later, are not visible yet and must stay after the checkpoint), and never
 * closer to now() than `lagSeconds`. A transaction open longer than `maxLagSeconds` does not
 * hold it back: the tail a scrape counts stays bounded. Run inside a transaction; only one
 * process advances at a time (the row lock, SKIP LOCKED: the others skip). Returns whether it moved.
 */
export async function advanceTotals(tx: Db, o: AdvanceOptions = {}): Promise<boolean> {
  const { minIntervalSeconds = 60, lagSeconds = 30, maxLagSeconds = 600 } = o;
  const c = await tx.query<{ target: string }>(
    `
    SELECT greatest(c.through, now() - $3 * interval '1 second', least(now() - $2 * interval '1 second',
             (SELECT min(xact_start) - interval '1 millisecond' FROM pg_stat_activity
               WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid())))::text AS target
      FROM metric_checkpoint c
     WHERE c.id = 1 AND (c.through = '-infinity' OR c.advanced_at <= now() - $1 * interval '1 second')
       FOR UPDATE SKIP LOCKED`,
    [minIntervalSeconds, lagSeconds, maxLagSeconds],
  );
  const row = c.rows[0];
  if (!row) return false;
  await tx.query(
    `
    INSERT INTO metric_totals (metric, labels, value)
    SELECT metric, labels, sum(value) FROM (${deltaSql(CHECKPOINT, '$1::timestamptz')}) d GROUP BY metric, labels
    ON CONFLICT (metric, labels) DO UPDATE SET value = metric_totals.value + EXCLUDED.value`,
    [row.target],
  );
  await tx.query(`UPDATE metric_checkpoint SET through = $1, advanced_at = now() WHERE id = 1`, [row.target]);
  return true;
}
