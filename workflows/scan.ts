import { ActivityFailure, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { ScheduledStartTimeKey, type TriggerArgs } from './schedule-trigger.js';

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
  windowsFilled: number; intentsStarted: number; outboxRedelivered: number;
  effectsReconciled: number; effectsNotApplied: number;
  replaysStarted: number; replaysFinished: number; webhooksResignalled: number; errors: number;
}

export interface ScanReport extends ScanCounts { now: string; errorDetails: string[] }

const scan = proxyActivities<Activities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '2s', maximumInterval: '30s', maximumAttempts: 3 },
});
/** Redelivery uses the job's own `deliverOutbox`; a notification that still fails waits for the next scan. */
const redeliver = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 3 },
  summary: 'compensation scan: redeliver a stuck outbox row',
});

/**
 * The compensation scan: finds and repairs, idempotently, what fell through the cracks
 * (missed schedule windows, intents whose workflow never started, outbox rows past their
 * deadline, effects stuck in doubt, replays their request left open, webhooks never signalled) and reports the counts. Each repair is itself guarded by
 * a unique constraint or a conditional update, so two scans at once repair each thing once.
 */
export async function compensationScan(input: ScanInput): Promise<ScanReport> {
  const info = workflowInfo();
  const now = input.now ?? (info.typedSearchAttributes.get(ScheduledStartTimeKey) ?? info.startTime).toISOString();
  const limit = input.limit ?? 100;
  const r: ScanReport = {
    now, windowsFilled: 0, intentsStarted: 0, outboxRedelivered: 0, effectsReconciled: 0, effectsNotApplied: 0,
    replaysStarted: 0, replaysFinished: 0, webhooksResignalled: 0, errors: 0, errorDetails: [],
  };
  const attempt = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      r.errors += 1;
      r.errorDetails.push(`${what}: ${err.cause?.message ?? err.message}`);
    }
  };

  await attempt('missed windows', async () => {
    const missed = await scan.findMissedWindows({ schedules: input.schedules, now, since: input.since, graceMs: input.windowGraceMs ?? 5 * 60_000, limit });
    for (const m of missed) {
      await attempt(`window ${m.window.start}`, async () => {
        const done = await scan.ensureWindowJobs({ scheduleId: m.scheduleId, jobType: m.jobType, window: m.window, source: 'scan', triggerId: info.workflowId });
        if (done.filledNow) r.windowsFilled += 1;
      });
    }
  });
  await attempt('unstarted intents', async () => {
    r.intentsStarted = await scan.startUnstartedIntents({ now, graceMs: input.intentGraceMs ?? 2 * 60_000, limit });
  });
  await attempt('stuck outbox', async () => {
    for (const job of await scan.findStuckOutbox({ now, limit })) {
      await attempt(`outbox of ${job.jobId}`, async () => {
        r.outboxRedelivered += await redeliver.deliverOutbox(job);
      });
    }
  });
  await attempt('in-doubt effects', async () => {
    const e = await scan.reconcileInDoubtEffects({ now, leaseMs: input.effectLeaseMs ?? 10 * 60_000, limit });
    r.effectsReconciled = e.reconciled;
    r.effectsNotApplied = e.notApplied;
  });
  await attempt('stuck replays', async () => {
    const s = await scan.repairStuckReplays({ now, graceMs: input.replayGraceMs ?? 2 * 60_000, limit });
    r.replaysStarted = s.started;
    r.replaysFinished = s.finished;
  });
  await attempt('pending webhook signals', async () => {
    r.webhooksResignalled = await scan.resignalPendingWebhooks({ now, graceMs: input.webhookGraceMs ?? 60_000, limit });
  });
  await scan.recordScanRun({ ...r, runId: info.runId, workflowId: info.workflowId, startedAt: info.runStartTime.toISOString() });
  log.info('compensation scan finished', { ...r });
  return r;
}
