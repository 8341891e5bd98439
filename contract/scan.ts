/**
 * The contract of the scheduled-window trigger and the compensation scan: their arguments
 * and reports, shared by the workflows, the activities, the schedule declarations and the
 * store. Workflow-safe.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { ScheduleWindow } from './schedule-window.js';

/** Set by the Temporal scheduler on every workflow it starts; undefined for manual starts. */
export const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

export interface TriggerArgs {
  /** Declaration name (for logs). */
  schedule: string;
  scheduleId: string;
  /** The scheduled job type (its `defineJob({ schedule })`): the registry says how its windows become jobs. */
  jobType: string;
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

/** A scheduled job type whose missed windows the scan fills. */
export interface ScannedSchedule extends TriggerArgs {
  /** How far back missed windows are filled. */
  fillLookbackMs: number;
}

export interface ScanInput {
  schedules: ScannedSchedule[];
  /** Reference time (ISO 8601). Default: the scheduled time, else the workflow's start time; never the wall clock. */
  now?: string;
  /** Fill windows from here on (ISO 8601). Default: the later of the Schedule's creation and `now - fillLookbackMs`. */
  since?: string;
  /** A window is missed only once its fire time is this old (the Schedule's own trigger goes first). Default 5 min. */
  windowGraceMs?: number;
  /** An intent without a workflow is repaired only when older than this. Default 2 min. */
  intentGraceMs?: number;
  /** An in-doubt pending effect is reconciled only when its last attempt is older than this (the lease). Default 10 min. */
  effectLeaseMs?: number;
  /** A dead letter `replaying` is checked for repair only when it has not changed for this long. Default 2 min. */
  replayGraceMs?: number;
  /** A webhook delivery `pending_signal` is signalled again only when its last try is this old (past the 5 s redelivery lease). Default 1 min. */
  webhookGraceMs?: number;
  /** At most this many repairs of each kind per run. Default 100. */
  limit?: number;
}

export interface ScanCounts {
  windowsFilled: number;
  intentsStarted: number;
  outboxRedelivered: number;
  effectsReconciled: number;
  effectsNotApplied: number;
  replaysStarted: number;
  replaysFinished: number;
  webhooksResignalled: number;
  errors: number;
}

export interface ScanReport extends ScanCounts {
  now: string;
  errorDetails: string[];
}
