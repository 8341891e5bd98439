import type { StageTimings, StageVerdict } from '../lib/job-stage.js';
import type { Client } from '@temporalio/client';
import type pg from 'pg';

export type EventSource = 'postgres' | 'temporal';

export interface TimelineEvent {
  /** ISO 8601 UTC. */
  at: string;
  source: EventSource;
  /** The table (Postgres) or the history event type (Temporal) the event comes from. */
  kind: string;
  event: string;
  detail?: string;
}

export interface JobTimeline {
  jobId: string;
  tenantId: string;
  jobType: string;
  priority: string;
  status: string;
  generatedAt: string;
  /** The stage verdict in words (`verdict.words`), and the next expected step. */
  stage: string;
  nextStep: string;
  verdict: StageVerdict;
  timings: StageTimings;
  duplicates: { count: number; at: string[] };
  lineage: { replayOf?: string; replays: Array<{ jobId: string; status: string; createdAt: string }>; deadLetterIds: string[] };
  temporal: {
    workflowId: string;
    runId?: string;
    status?: string;
    taskQueue?: string;
    historyEvents?: number;
    /** Events of a long history the timeline did not read (between its first and newest ones). */
    historyEventsOmitted?: number;
    note?: string;
  };
  /** The job's trace (its intake ran with tracing on: lib/tracing.ts), linked when `TRACE_UI_URL` is set; null: none recorded. */
  trace: { traceId: string; url?: string } | null;
  events: TimelineEvent[];
}

export interface TimelineDeps {
  pool: pg.Pool;
  temporal?: Client;
  taskQueue: string;
  /** `TRACE_UI_URL`: where the job's trace is linked. Default none. */
  traceUiUrl?: string | undefined;
  /** How much of a long history the timeline reads (services/timeline-temporal.ts `HISTORY_WINDOW`). */
  historyWindow?: HistoryWindow;
}

/**
 * A history is read page by page, its first `head` events forwards and, when it is longer, its
 * newest `tail` events backwards: a job that waited for a slot for hours can have thousands of
 * events, and the timeline needs its start and its present, not every wait in between.
 */
export interface HistoryWindow {
  head: number;
  tail: number;
  pageSize: number;
}
