import type { ScanCounts } from '../contract/scan.js';
import type { Db } from '../lib/db.js';
import { olderThan } from './live-jobs.js';

/** One row per scan run; a retried recording writes it once. */
export async function insertScanRun(
  db: Db,
  r: ScanCounts & { runId: string; workflowId: string; now: string; startedAt: string; errorDetails: string[] },
): Promise<void> {
  await db.query(
    `INSERT INTO scan_runs (run_id, workflow_id, scan_now, windows_filled, intents_started, outbox_redelivered,
                            effects_reconciled, effects_not_applied, replays_started, replays_finished, webhooks_resignalled,
                            errors, error_details, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (run_id) DO NOTHING`,
    [
      r.runId,
      r.workflowId,
      r.now,
      r.windowsFilled,
      r.intentsStarted,
      r.outboxRedelivered,
      r.effectsReconciled,
      r.effectsNotApplied,
      r.replaysStarted,
      r.replaysFinished,
      r.webhooksResignalled,
      r.errors,
      JSON.stringify(r.errorDetails),
      r.startedAt,
    ],
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
    runs: Number(x.runs),
    lastRunAt: (x.last_run_at as Date | null) ?? null,
    windowsFilled: Number(x.windows_filled),
    intentsStarted: Number(x.intents_started),
    outboxRedelivered: Number(x.outbox_redelivered),
    effectsReconciled: Number(x.effects_reconciled),
    effectsNotApplied: Number(x.effects_not_applied),
    replaysStarted: Number(x.replays_started),
    replaysFinished: Number(x.replays_finished),
    webhooksResignalled: Number(x.webhooks_resignalled),
    errors: Number(x.errors),
  };
}

/** One batch of the retention cleanup: scan runs that finished more than `days` ago. */
export async function deleteExpiredScanRuns(db: Db, days: number, limit: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM scan_runs WHERE ctid IN (SELECT ctid FROM scan_runs WHERE ${olderThan('finished_at', 1)} LIMIT $2)`,
    [days, limit],
  );
  return r.rowCount ?? 0;
}
