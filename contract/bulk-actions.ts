/**
 * Bulk actions (workflows/bulk-action.ts, services/bulk-actions.ts): what a request carries,
 * its signals and its progress query. Workflow-safe: imports only the SDK's definitions.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

export const BULK_ACTIONS = ['cancel', 'rerun', 'discard', 'retry-now'] as const;
/** `cancel`, `rerun` and `retry-now` act on jobs; `discard` on dead letters. */
export type BulkActionKind = (typeof BULK_ACTIONS)[number];

export const bulkPauseSignal = defineSignal('bulkPause');
export const bulkResumeSignal = defineSignal('bulkResume');
export const bulkStopSignal = defineSignal<[{ reason?: string; by?: string }]>('bulkStop');
export const bulkProgressQuery = defineQuery<BulkProgress>('bulkProgress');

export interface BulkOptions {
  /** Targets handed to one activity at most. Default 25. */
  batchSize: number;
  /** Activities (batches) running at once. Default 2. */
  concurrency: number;
  /** Items per minute: a token bucket refilled continuously, holding one second's worth. Default 600. */
  ratePerMinute: number;
  /** The bucket's size (derived: one second's worth of the rate, at least 1). */
  burst: number;
}

/** What a bulk-action workflow receives. The targets were resolved (and previewed) by the service. */
export interface BulkArgs {
  bulkId: string;
  action: BulkActionKind;
  /** Operator named in every audit row. */
  requestedBy: string;
  targets: string[];
  batchSize?: number;
  concurrency?: number;
  ratePerMinute?: number;
  /** Recorded with each cancelled job or discarded dead letter. */
  reason?: string;
  /** `rerun`: the first effect step that executes again (the ones before it reuse the original's). */
  fromStep?: string;
  /** State carried over continue-as-new. */
  carried?: BulkCarried;
}

export interface BulkCarried {
  queue: string[];
  applied: number;
  skipped: number;
  failed: number;
  batches: number;
  peak: number;
  paused: boolean;
  bucket: { tokens: number; refilledAt: number };
  stopReason?: string;
}

export type BulkState = 'running' | 'paused' | 'stopping' | 'completed' | 'stopped';

export interface BulkProgress {
  bulkId: string;
  action: BulkActionKind;
  state: BulkState;
  requestedBy: string;
  options: BulkOptions;
  counts: { total: number; pending: number; running: number; applied: number; skipped: number; failed: number };
  /** Most batches ever running at once (the concurrency bound, observed). */
  peakRunning: number;
  batchesStarted: number;
  stopReason?: string;
}

/** One item's result, as the activity reports it (its audit row says the same). */
export interface BulkItemResult {
  targetId: string;
  outcome: 'applied' | 'skipped' | 'failed';
  detail?: string;
  /** `rerun`: the new job. */
  jobId?: string;
}
