/**
 * The contract of the retention cleanup: which tables it prunes, its input (the retention
 * period of each table, in days, and the batch size) and its report. Shared by the config,
 * the schedule declaration, the workflow and the activity. Workflow-safe.
 */

/** Every table the cleanup prunes. `dead_letters` and `dead_letter_actions` are evidence: never pruned. */
export const RETENTION_TABLES = [
  'job_intents',
  'job_attempts',
  'effects',
  'outbox',
  'activity_leases',
  'admissions',
  'intent_duplicates',
  'webhook_deliveries',
  'scan_runs',
  'degradation_audit',
  'health_samples',
  'intake_rejections',
  'concurrency_leases',
] as const;
export type RetentionTable = (typeof RETENTION_TABLES)[number];

export interface RetentionInput {
  /** Retention period per table, in days (whole or fractional). */
  days: Record<RetentionTable, number>;
  /** Rows per DELETE statement (each statement is its own short transaction). */
  batchSize: number;
}

/** Rows deleted per table by one cleanup run. */
export type RetentionReport = Record<RetentionTable, number>;
