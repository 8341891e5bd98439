import type { ScanCounts } from '../contract/scan.js';
import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

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

/** When the last scan run finished (null: never); one index probe. */
export async function lastScanRunAt(db: Db): Promise<Date | null> {
  const r = await db.query<{ at: Date | null }>(`SELECT max(finished_at) AS at FROM scan_runs`);
  return r.rows[0]?.at ?? null;
}

/** One batch of the retention cleanup: scan runs that finished more than `days` ago. */
export function deleteExpiredScanRuns(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'scan_runs', age: 'finished_at' }, days, limit);
}
