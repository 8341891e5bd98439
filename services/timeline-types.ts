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
  temporal: { workflowId: string; runId?: string; status?: string; taskQueue?: string; historyEvents?: number; note?: string };
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
}
