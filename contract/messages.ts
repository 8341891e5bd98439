import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** Signals, queries and updates have explicit, stable names: they are part of the wire contract. */
export const jobProgressQuery = defineQuery<{ phase: string; detail: string }>('jobProgress');

/**
 * Sent (best-effort) by `PUT /v1/admin/degradation` to deferred jobs so they re-check at
 * once. Only a hint: the gate's own polling is what makes the pause hold and lift, also on
 * a server where nobody sends it.
 */
export const degradationChangedSignal = defineSignal('degradationChanged');

/**
 * Sent (best-effort) by the worker whose statement freed a concurrency slot to the job that
 * waited longest for one of its type (store/concurrency.ts `releaseSlot`): it tries again at
 * once. Only a hint: the wait's own timer still ends it.
 */
export const slotFreedSignal = defineSignal('slotFreed');

/** The product's search attributes (Keyword), the only declaration: every start sets them, every server registers them. */
export const TenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const JobTypeKey = defineSearchAttributeKey('JobType', SearchAttributeType.KEYWORD);
export const JobStateKey = defineSearchAttributeKey('JobState', SearchAttributeType.KEYWORD);
export const SEARCH_ATTRIBUTE_NAMES = [TenantIdKey.name, JobTypeKey.name, JobStateKey.name] as const;

/** Dead-letter replay (workflows/replay.ts): add dead letters, pause, resume, stop; progress. */
export const replayAddSignal = defineSignal<[{ ids: string[] }]>('replayAdd');
export const replayPauseSignal = defineSignal('replayPause');
export const replayResumeSignal = defineSignal('replayResume');
export const replayStopSignal = defineSignal<[{ reason?: string; by?: string }]>('replayStop');
export const replayProgressQuery = defineQuery<ReplayProgress>('replayProgress');

export type ReplayItemStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped';
export interface ReplayItem {
  deadLetterId: string;
  status: ReplayItemStatus;
  replayJobId?: string;
  startedAt?: string;
  finishedAt?: string;
  detail?: string;
  /** Left `replaying` by an earlier, closed replay request and taken over by this one. */
  takenOver?: boolean;
}
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

/** What a replay request asks for. TSDoc states each default (the HTTP API applies them). */
export interface ReplayArgs {
  replayId: string;
  /** Operator named in every action the replay records. */
  requestedBy: string;
  deadLetterIds: string[];
  /** Dead letters per batch; a batch ends when all its replays have finished. Default 10. */
  batchSize?: number;
  /** Replays running at once. Default 3. */
  concurrency?: number;
  /** Replay starts per minute: a token bucket refilled continuously, holding one second's worth. Default 60. */
  ratePerMinute?: number;
  /** Stop condition: halt when more than this many replays fail again. Default 5. */
  maxFailures?: number;
  /** Stay open this long for more `replayAdd` signals once the queue is empty. Default 0. */
  keepOpenSeconds?: number;
  /**
   * Dead letters a closed replay request left `replaying`, each mapped to that request's ID:
   * this request takes them over (their replay job is started if it never was, else awaited).
   */
  takeOver?: Record<string, string>;
  /** State carried over continue-as-new (long replays keep their history small). */
  carried?: Carried;
}

export interface Carried {
  queue: string[];
  items: ReplayItem[];
  succeeded: number;
  failed: number;
  skipped: number;
  peakRunning: number;
  batchesStarted: number;
  paused: boolean;
  tokens: number;
  refilledAt: number;
}
