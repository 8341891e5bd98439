import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { ApplicationFailure, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { windowContaining, type ScheduleWindow } from './schedule-window.js';

/** Set by the Temporal scheduler on every workflow it starts; undefined for manual starts. */
export const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

export interface TriggerArgs {
  /** Declaration name (for logs). */
  schedule: string;
  scheduleId: string;
  jobType: 'digest';
  windowMs: number;
  windowOffsetMs: number;
  /**
   * Only for manual starts (an operator, a backfill script): the window to fill, given as
   * any instant inside it. A Schedule's own starts leave it unset and use their nominal time.
   */
  windowStart?: string;
}

export interface TriggerResult {
  window: ScheduleWindow;
  source: 'schedule' | 'manual';
  /** True when this trigger saw the window first. */
  firstTrigger: boolean;
  jobIds: string[];
}

const ensure = proxyActivities<Activities>({
  startToCloseTimeout: '60s',
  // Idempotent (unique window row, deterministic job IDs): retried until Postgres and
  // Temporal take it.
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

/**
 * The thin workflow a Schedule starts. Temporal appends the nominal time to its ID, so its
 * ID cannot be the job's: it derives the window from its *scheduled* time (never the wall
 * clock) and starts or finds the window's jobs, whose IDs derive from (type, window, tenant).
 * A duplicate trigger, a manual trigger in the same window or a backfill therefore finds
 * the jobs that exist instead of creating second ones.
 */
export async function scheduleTrigger(args: TriggerArgs): Promise<TriggerResult> {
  const info = workflowInfo();
  const scheduled = info.typedSearchAttributes.get(ScheduledStartTimeKey);
  const nominal = scheduled !== undefined ? scheduled.getTime() : args.windowStart !== undefined ? Date.parse(args.windowStart) : undefined;
  if (nominal === undefined || Number.isNaN(nominal)) {
    throw ApplicationFailure.nonRetryable(
      'no scheduled time: a manual start of scheduleTrigger must pass windowStart (ISO 8601)', 'ValidationError');
  }
  const window = windowContaining(nominal, { windowMs: args.windowMs, windowOffsetMs: args.windowOffsetMs });
  const source = scheduled !== undefined ? 'schedule' : 'manual';
  const r = await ensure.ensureWindowJobs({ scheduleId: args.scheduleId, jobType: args.jobType, window, source, triggerId: info.workflowId });
  log.info('scheduled window ensured', { schedule: args.schedule, windowStart: window.start, jobs: r.jobIds.length, firstTrigger: r.firstTrigger });
  return { window, source, firstTrigger: r.firstTrigger, jobIds: r.jobIds };
}
