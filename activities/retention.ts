import { Context } from '@temporalio/activity';
import { withTransaction, type Db } from '../lib/db.js';
import { RETENTION_TABLES, type RetentionInput, type RetentionReport, type RetentionTable } from '../contract/retention.js';
import { deleteAttemptsOfJobs, deleteExpiredAttempts } from '../store/attempts.js';
import { deleteEffectsOfJobs, deleteExpiredEffects } from '../store/effects.js';
import { deleteExpiredLeases, deleteLeasesOfJobs } from '../store/activity-leases.js';
import { deleteAdmissionsOfJobs, deleteExpiredAdmissions } from '../store/admissions.js';
import { deleteDuplicatesOfJobs, deleteExpiredDuplicates } from '../store/timeline.js';
import { deleteExpiredOutbox, deleteSettledOutboxOfJobs } from '../store/outbox.js';
import { deleteExpiredDeliveries } from '../store/webhook-deliveries.js';
import { deleteExpiredScanRuns } from '../store/scan-runs.js';
import { deleteExpiredAudit } from '../store/degradation.js';
import { deleteExpiredRejections, deleteExpiredSamples } from '../store/health.js';
import { deleteIntents, lockExpiredIntents } from '../store/intents.js';
import { deleteExpiredSlotLeases } from '../store/concurrency.js';
import type { ActivityDeps } from './deps.js';

type BatchDelete = (db: Db, days: number, limit: number) => Promise<number>;

/** Each table's own batch (a `DELETE ... WHERE ctid IN (SELECT ... LIMIT n)` in its store file). */
const BY_AGE: Array<[Exclude<RetentionTable, 'job_intents'>, BatchDelete]> = [
  ['job_attempts', deleteExpiredAttempts],
  ['effects', deleteExpiredEffects],
  ['activity_leases', deleteExpiredLeases],
  ['admissions', deleteExpiredAdmissions],
  ['intent_duplicates', deleteExpiredDuplicates],
  ['outbox', deleteExpiredOutbox],
  ['webhook_deliveries', deleteExpiredDeliveries],
  ['scan_runs', deleteExpiredScanRuns],
  ['degradation_audit', deleteExpiredAudit],
  ['health_samples', deleteExpiredSamples],
  ['intake_rejections', deleteExpiredRejections],
  ['concurrency_leases', deleteExpiredSlotLeases],
];

/** The retention cleanup's activity. Function names are Temporal activity types. */
export function createRetentionActivities(deps: ActivityDeps) {
  return {
    /**
     * Deletes, batch by batch, every row past its table's retention that nothing still needs
     * (see each store statement for what is never deleted). Heartbeats after every batch; a
     * retried or concurrent run deletes what is left and nothing else, so it is idempotent.
     */
    async cleanupRetention(input: RetentionInput): Promise<RetentionReport> {
      const ctx = Context.current();
      const limit = input.batchSize;
      const report = Object.fromEntries(RETENTION_TABLES.map((t) => [t, 0])) as RetentionReport;
      const beat = (table: RetentionTable) => ctx.heartbeat({ table, deleted: report[table] });

      // Finished jobs past the job_intents retention go whole, in one transaction per batch:
      // their rows of every per-job table, then the intent. A re-submitted key sees either the
      // whole job (200, the same job) or nothing of it; never a new job over the old effects.
      for (;;) {
        const n = await withTransaction(deps.pool, async (tx) => {
          const ids = await lockExpiredIntents(tx, input.days.job_intents, limit);
          if (ids.length === 0) return 0;
          report.job_attempts += await deleteAttemptsOfJobs(tx, ids);
          report.effects += await deleteEffectsOfJobs(tx, ids);
          report.activity_leases += await deleteLeasesOfJobs(tx, ids);
          report.admissions += await deleteAdmissionsOfJobs(tx, ids);
          report.intent_duplicates += await deleteDuplicatesOfJobs(tx, ids);
          report.outbox += await deleteSettledOutboxOfJobs(tx, ids);
          return deleteIntents(tx, ids);
        });
        report.job_intents += n;
        beat('job_intents');
        if (n < limit) break;
      }
      // Then each table by its own age (rows that outlive their table's period while the job is kept).
      for (const [table, del] of BY_AGE) {
        // A Schedule written by an older version has no period for a table added since: skip it.
        if (typeof input.days[table] !== 'number') continue;
        for (;;) {
          const n = await del(deps.pool, input.days[table], limit);
          report[table] += n;
          beat(table);
          if (n < limit) break;
        }
      }
      const total = Object.values(report).reduce((a, b) => a + b, 0);
      if (total > 0) deps.log.info({ deleted: report }, 'retention: expired rows deleted');
      return report;
    },
  };
}
