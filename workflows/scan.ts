import { ActivityFailure, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import { ScheduledStartTimeKey, type ScanInput, type ScanReport } from '../contract/scan.js';

const scan = proxyActivities<SystemActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '2s', maximumInterval: '30s', maximumAttempts: 3 },
});
/** Redelivery uses the job's own `deliverOutbox`; a notification that still fails waits for the next scan. */
const redeliver = proxyActivities<SystemActivities>({
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
    now,
    windowsFilled: 0,
    intentsStarted: 0,
    outboxRedelivered: 0,
    effectsReconciled: 0,
    effectsNotApplied: 0,
    replaysStarted: 0,
    replaysFinished: 0,
    webhooksResignalled: 0,
    errors: 0,
    errorDetails: [],
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
    const missed = await scan.findMissedWindows({
      schedules: input.schedules,
      now,
      since: input.since,
      graceMs: input.windowGraceMs ?? 5 * 60_000,
      limit,
    });
    for (const m of missed) {
      await attempt(`window ${m.window.start}`, async () => {
        const done = await scan.ensureWindowJobs({
          scheduleId: m.scheduleId,
          jobType: m.jobType,
          window: m.window,
          source: 'scan',
          triggerId: info.workflowId,
        });
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
