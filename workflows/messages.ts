import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** Signals, queries and updates have explicit, stable names: they are part of the wire contract. */
export const jobProgressQuery = defineQuery<{ phase: string; detail: string }>('jobProgress');

/** A provider's `transcription.completed` webhook, forwarded by `POST /v1/webhooks/{source}`. */
export interface TranscriptionEvent { webhookId: string; transcriptionId: string; status: string; text: string }
export const transcriptionCompletedSignal = defineSignal<[TranscriptionEvent]>('transcriptionCompleted');

export const JobStateKey = defineSearchAttributeKey('JobState', SearchAttributeType.KEYWORD);
/** Same names as lib/temporal.ts (which workflow code cannot import): set on replay jobs. */
export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const JobTypeKey = defineSearchAttributeKey('JobType', SearchAttributeType.KEYWORD);

/** Dead-letter replay (workflows/replay.ts): add dead letters, pause, resume, stop; progress. */
export const replayAddSignal = defineSignal<[{ ids: string[] }]>('replayAdd');
export const replayPauseSignal = defineSignal('replayPause');
export const replayResumeSignal = defineSignal('replayResume');
export const replayStopSignal = defineSignal<[{ reason?: string; by?: string }]>('replayStop');
export const replayProgressQuery = defineQuery<ReplayProgress>('replayProgress');

export type ReplayItemStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped';
export interface ReplayItem { deadLetterId: string; status: ReplayItemStatus; replayJobId?: string; startedAt?: string; finishedAt?: string; detail?: string }
export interface ReplayProgress {
  replayId: string;
  state: 'running' | 'paused' | 'stopping' | 'stopped' | 'halted' | 'completed';
  requestedBy: string;
  /** `burst`: starts allowed at once after an idle second (token bucket capacity). */
  options: { batchSize: number; concurrency: number; ratePerMinute: number; burst: number; maxFailures: number };
  counts: { total: number; pending: number; running: number; succeeded: number; failed: number; skipped: number };
  /** Most replays ever running at once (the concurrency bound, observed). */
  peakRunning: number;
  batchesStarted: number;
  stopReason?: string;
  items: ReplayItem[];
}
