import type pg from 'pg';
import type { Priority } from '../contract/job-types.js';
import type { ScanCounts } from '../contract/scan.js';

type Db = pg.Pool | pg.PoolClient;

export interface UnstartedIntent { job_id: string; tenant_id: string; job_type: string; priority: Priority; created_at: Date }

/**
 * Intents whose workflow never started, older than the grace period. The intake commits
 * the intent first and marks it started after `workflow.start` succeeds, removing it when the
 * start fails; a committed row still unmarked past the grace period was left by a lost start
 * or a lost mark (a crashed API process or trigger, a dropped connection). Oldest first, bounded.
 */
export async function listUnstartedIntents(db: Db, olderThan: Date, limit: number): Promise<UnstartedIntent[]> {
  const r = await db.query<UnstartedIntent>(
    `SELECT job_id, tenant_id, job_type, priority, created_at FROM job_intents
      WHERE workflow_started_at IS NULL AND created_at < $1
      ORDER BY created_at LIMIT $2`,
    [olderThan, limit],
  );
  return r.rows;
}

/** Only the first marker counts: a concurrent scan or trigger that marked it first makes this a no-op. */
export async function markStartedIfUnstarted(db: Db, jobId: string): Promise<boolean> {
  const r = await db.query('UPDATE job_intents SET workflow_started_at = now() WHERE job_id = $1 AND workflow_started_at IS NULL', [jobId]);
  return r.rowCount === 1;
}

export interface StuckOutboxJob { job_id: string; tenant_id: string; job_type: string; priority: Priority; rows: number }

/**
 * Jobs with outbox rows still pending past their deadline, grouped per job (delivery runs
 * per job). Rows whose effect the upstream refused for good are left out: redelivering
 * cannot help them, and the job already shows the failed notification.
 */
export async function listStuckOutboxJobs(db: Db, now: Date, limit: number): Promise<StuckOutboxJob[]> {
  const r = await db.query<StuckOutboxJob>(
    `SELECT o.job_id, j.tenant_id, j.job_type, j.priority, count(*)::int AS rows
       FROM outbox o JOIN job_intents j ON j.job_id = o.job_id
      WHERE o.state = 'pending' AND o.deliver_by < $1
        AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.effect_key = o.effect_key AND e.state = 'failed')
      GROUP BY o.job_id, j.tenant_id, j.job_type, j.priority
      ORDER BY min(o.deliver_by) LIMIT $2`,
    [now, limit],
  );
  return r.rows;
}

export interface InDoubtEffect { effect_key: string; job_id: string; tenant_id: string; step: string; attempts: number; last_attempt_at: Date }

/**
 * Effects still `pending` and in doubt whose last attempt is older than the lease: no
 * attempt holds them, and one may have reached the upstream without us seeing the answer.
 */
export async function listInDoubtEffects(db: Db, lastAttemptBefore: Date, limit: number): Promise<InDoubtEffect[]> {
  const r = await db.query<InDoubtEffect>(
    `SELECT effect_key, job_id, tenant_id, step, attempts, last_attempt_at FROM effects
      WHERE state = 'pending' AND in_doubt AND last_attempt_at < $1
      ORDER BY last_attempt_at LIMIT $2`,
    [lastAttemptBefore, limit],
  );
  return r.rows;
}

/**
 * The upstream has no record of the key: the effect was not applied. Fenced on the attempt
 * count (every claim increments it), so an attempt that began after the scan read the row
 * (and may be calling the upstream right now) keeps its doubt.
 */
export async function markEffectNotApplied(db: Db, effectKey: string, attempts: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE effects SET in_doubt = false, reconciliations = reconciliations + 1, updated_at = now()
      WHERE effect_key = $1 AND state = 'pending' AND in_doubt AND attempts = $2`,
    [effectKey, attempts],
  );
  return r.rowCount === 1;
}


/**
 * The upstream holds a completed response for the key: record it as the effect's success
 * (as `recordEffectSuccess` would) and count the reconciliation. Only a still-pending row
 * changes, so two scans at once record and count it once.
 */
export async function recordReconciledSuccess(db: Db, effectKey: string, providerRequestId: string | null, providerId: string | null, result: unknown): Promise<boolean> {
  const r = await db.query(
    `UPDATE effects SET state = 'succeeded', in_doubt = false, provider_request_id = coalesce($2, provider_request_id),
            provider_id = coalesce($3, provider_id), result = $4, reconciliations = reconciliations + 1, updated_at = now()
      WHERE effect_key = $1 AND state = 'pending'`,
    [effectKey, providerRequestId, providerId, JSON.stringify(result)],
  );
  return r.rowCount === 1;
}

/** One row per scan run; a retried recording writes it once. */
export async function insertScanRun(db: Db, r: ScanCounts & { runId: string; workflowId: string; now: string; startedAt: string; errorDetails: string[] }): Promise<void> {
  await db.query(
    `INSERT INTO scan_runs (run_id, workflow_id, scan_now, windows_filled, intents_started, outbox_redelivered,
                            effects_reconciled, effects_not_applied, replays_started, replays_finished, webhooks_resignalled,
                            errors, error_details, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (run_id) DO NOTHING`,
    [r.runId, r.workflowId, r.now, r.windowsFilled, r.intentsStarted, r.outboxRedelivered, r.effectsReconciled,
      r.effectsNotApplied, r.replaysStarted, r.replaysFinished, r.webhooksResignalled, r.errors, JSON.stringify(r.errorDetails), r.startedAt],
  );
}

/** Totals over all runs, for metrics and the health report. */
export async function scanTotals(db: Db): Promise<ScanCounts & { runs: number; lastRunAt: Date | null }> {
  const r = await db.query<Record<string, string | Date | null>>(
    `SELECT count(*) AS runs, max(finished_at) AS last_run_at,
            coalesce(sum(windows_filled), 0) AS windows_filled, coalesce(sum(intents_started), 0) AS intents_started,
            coalesce(sum(outbox_redelivered), 0) AS outbox_redelivered, coalesce(sum(effects_reconciled), 0) AS effects_reconciled,
            coalesce(sum(effects_not_applied), 0) AS effects_not_applied, coalesce(sum(replays_started), 0) AS replays_started,
            coalesce(sum(replays_finished), 0) AS replays_finished, coalesce(sum(webhooks_resignalled), 0) AS webhooks_resignalled,
            coalesce(sum(errors), 0) AS errors
       FROM scan_runs`,
  );
  const x = r.rows[0]!;
  return {
    runs: Number(x.runs), lastRunAt: (x.last_run_at as Date | null) ?? null,
    windowsFilled: Number(x.windows_filled), intentsStarted: Number(x.intents_started), outboxRedelivered: Number(x.outbox_redelivered),
    effectsReconciled: Number(x.effects_reconciled), effectsNotApplied: Number(x.effects_not_applied),
    replaysStarted: Number(x.replays_started), replaysFinished: Number(x.replays_finished), webhooksResignalled: Number(x.webhooks_resignalled),
    errors: Number(x.errors),
  };
}

