import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError } from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import { NonRetryableError } from '../lib/errors.js';
import { insertScanRun } from '../store/scan-runs.js';
import { listStuckOutboxJobs } from '../store/outbox.js';
import { listInDoubtEffects, recordReconciledSuccess, markEffectNotApplied } from '../store/effects.js';
import { listUnstartedIntents, markStartedIfUnstarted } from '../store/intents.js';
import { filledWindowStarts, pauseActionsBefore } from '../store/schedules.js';
import { pauseAt, pauseSpans } from '../services/schedule-windows.js';
import { DEFAULT_BUDGET } from '../contract/job-types.js';
import type { ScanReport, ScannedSchedule } from '../contract/scan.js';
import { windowContaining, type ScheduleWindow } from '../contract/schedule-window.js';
import { withHeartbeat } from './attempt.js';
import type { StepArgs } from '../contract/job-types.js';
import type { ActivityDeps } from './deps.js';
import { onStartPath, startExistingIntent } from '../services/start-job.js';

export interface MissedWindow {
  scheduleId: string;
  jobType: ScannedSchedule['jobType'];
  window: ScheduleWindow;
}

/** Which times the Schedule's spec matched in [from, to): Temporal computes cron and time zones for us. */
async function matchingTimes(scheduleId: string, fromMs: number, toMs: number): Promise<number[]> {
  const ctx = Context.current();
  const res = await ctx.client.workflowService.listScheduleMatchingTimes({
    namespace: ctx.info.workflowNamespace,
    scheduleId,
    startTime: msToTs(fromMs),
    endTime: msToTs(toMs),
  });
  return (res.startTime ?? []).map((t) => tsToMs(t));
}

/** The compensation scan's activities. Function names are Temporal activity types. */
export function createScanActivities(deps: ActivityDeps) {
  return {
    /**
     * Windows the Schedule's spec says should have fired (longer ago than the grace period)
     * that have no filled `schedule_windows` row: the server was down past the catch-up
     * window, the Schedule was paused outside durable-jobs (no audit row), or a trigger was
     * lost. A window that fired while an operator had the Schedule paused through the API, the
     * CLI or the console (audited, `schedule_actions`) is left alone: that pause said not to
     * run it, and a backfill runs it when someone wants it after all.
     */
    async findMissedWindows(a: {
      schedules: ScannedSchedule[];
      now: string;
      since?: string;
      graceMs: number;
      limit: number;
    }): Promise<MissedWindow[]> {
      const now = Date.parse(a.now);
      const out: MissedWindow[] = [];
      for (const s of a.schedules) {
        // The registry is the list of scheduled types: a Schedule of a type this worker does not run with a schedule is left alone.
        if (!deps.jobs.get(s.jobType)?.schedule) {
          deps.log.warn(
            { scheduleId: s.scheduleId, jobType: s.jobType },
            'scan: no scheduled job type of this name; its windows are not checked',
          );
          continue;
        }
        let createdAt: number;
        try {
          createdAt = (await Context.current().client.schedule.getHandle(s.scheduleId).describe()).info.createdAt.getTime();
        } catch (err) {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
          deps.log.warn({ scheduleId: s.scheduleId }, 'scan: schedule not found; its windows are not checked');
          continue;
        }
        const from = a.since !== undefined ? Date.parse(a.since) : Math.max(createdAt, now - s.fillLookbackMs);
        const to = now - a.graceMs;
        if (to <= from) continue;
        const pauses = pauseSpans(await pauseActionsBefore(deps.pool, s.jobType, s.scheduleId, new Date(to)));
        const starts = new Map<string, ScheduleWindow>();
        let paused = 0;
        for (const t of await matchingTimes(s.scheduleId, from, to)) {
          if (pauseAt(pauses, t)) paused += 1;
          else {
            const w = windowContaining(t, s);
            starts.set(w.start, w);
          }
        }
        if (paused > 0)
          deps.log.info({ scheduleId: s.scheduleId, firings: paused }, 'scan: firings during an operator pause of the Schedule left alone');
        const filled = await filledWindowStarts(deps.pool, s.jobType, [...starts.keys()]);
        for (const w of starts.values()) {
          if (!filled.has(w.start) && out.length < a.limit) out.push({ scheduleId: s.scheduleId, jobType: s.jobType, window: w });
        }
      }
      if (out.length > 0)
        deps.log.info({ windows: out.map((m) => `${m.jobType}@${m.window.start}`) }, 'scan: missed schedule windows found');
      return out;
    },

    /** Starts (or finds) the workflow of every intent that never got one; counts those this call marked. */
    async startUnstartedIntents(a: { now: string; graceMs: number; limit: number }): Promise<number> {
      const ctx = Context.current();
      return withHeartbeat(async () => {
        let started = 0;
        for (const row of await listUnstartedIntents(deps.pool, new Date(Date.parse(a.now) - a.graceMs), a.limit)) {
          if (!deps.jobs.has(row.job_type)) {
            deps.log.warn({ jobId: row.job_id, jobType: row.job_type }, 'scan: intent of an unknown job type left alone');
            continue;
          }
          await startExistingIntent(
            ctx.client,
            ctx.info.taskQueue,
            onStartPath(deps.jobs.require(row.job_type), deps.fastPathTypes),
            { jobId: row.job_id, tenantId: row.tenant_id, jobType: row.job_type, priority: row.priority },
            row.created_at,
            deps.jobBudgets,
            { runAt: row.run_at },
          );
          if (await markStartedIfUnstarted(deps.pool, row.job_id)) {
            started += 1;
            deps.log.info(
              { jobId: row.job_id, jobType: row.job_type, repair: 'intent_started' },
              'scan: started the workflow of an intent that had none',
            );
          }
        }
        return started;
      });
    },

    /** Jobs whose outbox rows are still pending past their deadline; the scan redelivers them with `deliverOutbox`. */
    async findStuckOutbox(a: { now: string; limit: number }): Promise<StepArgs[]> {
      const rows = await listStuckOutboxJobs(deps.pool, new Date(a.now), a.limit);
      const out: StepArgs[] = [];
      for (const r of rows) {
        if (!deps.jobs.has(r.job_type)) continue;
        deps.log.info({ jobId: r.job_id, rows: r.rows, repair: 'outbox_redeliver' }, 'scan: outbox rows past their deadline; redelivering');
        out.push({ jobId: r.job_id, tenantId: r.tenant_id, jobType: r.job_type, priority: r.priority });
      }
      return out;
    },

    /**
     * Asks the upstream, by effect key, whether an in-doubt effect was applied
     * (`GET /v1/idempotency/{key}`): if so, its stored response is recorded as the effect's
     * success (the job's next attempt reuses it, nothing is called twice); if the upstream
     * never saw the key, the effect is marked not applied. A request still in progress is
     * left for the next scan.
     */
    async reconcileInDoubtEffects(a: { now: string; leaseMs: number; limit: number }): Promise<{ reconciled: number; notApplied: number }> {
      return withHeartbeat(async () => {
        let reconciled = 0;
        let notApplied = 0;
        for (const e of await listInDoubtEffects(deps.pool, new Date(Date.parse(a.now) - a.leaseMs), a.limit)) {
          let res;
          try {
            res = await deps.provider({
              method: 'GET',
              path: `/v1/idempotency/${encodeURIComponent(e.effect_key)}`,
              tenantId: e.tenant_id,
              timeoutMs: DEFAULT_BUDGET.upstreamTimeoutMs,
            });
          } catch (err) {
            if (err instanceof NonRetryableError && err.details.statusCode === 404) {
              if (await markEffectNotApplied(deps.pool, e.effect_key, e.attempts)) {
                notApplied += 1;
                deps.log.info(
                  { jobId: e.job_id, effectKey: e.effect_key, repair: 'effect_not_applied' },
                  'scan: upstream never saw the effect; marked not applied',
                );
              }
              continue;
            }
            throw err;
          }
          const body = res.body as { state?: string; response?: Record<string, unknown> };
          if (body.state !== 'completed' || !body.response) continue;
          const response = body.response;
          const recorded = await recordReconciledSuccess(
            deps.pool,
            e.effect_key,
            typeof response.requestId === 'string' ? response.requestId : null,
            typeof response.id === 'string' ? response.id : null,
            response,
          );
          if (!recorded) continue;
          reconciled += 1;
          deps.log.info(
            { jobId: e.job_id, effectKey: e.effect_key, repair: 'effect_reconciled' },
            'scan: in-doubt effect was applied upstream; recorded its result',
          );
        }
        return { reconciled, notApplied };
      });
    },

    async recordScanRun(r: ScanReport & { runId: string; workflowId: string; startedAt: string }): Promise<void> {
      await insertScanRun(deps.pool, { ...r, now: r.now });
    },
  };
}
