import { ApplicationFailure, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import { ScheduledStartTimeKey, type TriggerArgs, type TriggerResult } from '../contract/scan.js';
import { windowContaining } from '../contract/schedule-window.js';

const ensure = proxyActivities<SystemActivities>({
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
      'no scheduled time: a manual start of scheduleTrigger must pass windowStart (ISO 8601)',
      'ValidationError',
    );
  }
  const window = windowContaining(nominal, { windowMs: args.windowMs, windowOffsetMs: args.windowOffsetMs });
  const source = scheduled !== undefined ? 'schedule' : 'manual';
  const r = await ensure.ensureWindowJobs({
    scheduleId: args.scheduleId,
    jobType: args.jobType,
    window,
    source,
    triggerId: info.workflowId,
  });
  log.info('scheduled window ensured', {
    schedule: args.schedule,
    windowStart: window.start,
    jobs: r.jobIds.length,
    firstTrigger: r.firstTrigger,
  });
  return { window, source, firstTrigger: r.firstTrigger, jobIds: r.jobIds };
}
