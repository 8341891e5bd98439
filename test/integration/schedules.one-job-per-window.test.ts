import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unkeyed } from '../../lib/ids.js';
import { ensureSchedules, scheduleDeclarations, scheduleIdFor, type JobScheduleDeclaration } from '../../services/schedules.js';
import { defaultJobRegistry } from '../../jobs/index.js';

// What the shipped registry declares: the digest's schedule (in its definition) and the scan.
const SCHEDULE_DECLARATIONS = scheduleDeclarations(defaultJobRegistry);
import { getWindow } from '../support/queries.js';
import { windowContaining, windowKey, type ScheduleWindow } from '../../contract/schedule-window.js';
import { startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let h: Harness;
let decl: JobScheduleDeclaration;
let scheduleId: string;
beforeAll(async () => {
  h = await startHarness('schedules');
  // A daily digest whose windows start 12 hours from now: the schedule never fires on its
  // own during the test, and every trigger below falls into the window that contains now.
  decl = {
    kind: 'job',
    name: 'digest',
    jobType: 'digest',
    description: 'test digest',
    timing: { every: DAY, offset: Math.floor(((Date.now() + 12 * HOUR) % DAY) / 1_000) * 1_000 },
    overlap: 'BUFFER_ALL',
    catchupWindowMs: 60_000,
    paused: false,
  };
  scheduleId = scheduleIdFor(h.taskQueue, decl.name);
});
afterAll(async () => {
  await h?.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await h?.close();
});

async function digestJobIds(): Promise<string[]> {
  const r = await h.pool.query<{ job_id: string }>(`SELECT job_id FROM job_intents WHERE job_type = 'digest' ORDER BY job_id`);
  return r.rows.map((x) => x.job_id);
}

const expectedJobIds = (w: ScheduleWindow) =>
  Object.values(TENANTS)
    .map((t) => unkeyed.jobIdFor(t.id, 'digest', windowKey('digest', w)))
    .sort();

describe('Schedules: one job per (job type, window)', () => {
  it('creates the Schedule once and updates it only when its declaration changes, also when two processes start at once', async () => {
    const both = await Promise.all([ensureSchedules(h.temporal, h.taskQueue, [decl]), ensureSchedules(h.temporal, h.taskQueue, [decl])]);
    const outcomes = both.map((r) => r[0]!.outcome).sort();
    expect(outcomes).toContain('created');
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect((await ensureSchedules(h.temporal, h.taskQueue, [decl]))[0]).toEqual({ scheduleId, outcome: 'unchanged' });
    decl = { ...decl, catchupWindowMs: 120_000 };
    expect((await ensureSchedules(h.temporal, h.taskQueue, [decl]))[0]!.outcome).toBe('updated');
    expect((await ensureSchedules(h.temporal, h.taskQueue, [decl]))[0]!.outcome).toBe('unchanged');
    const desc = await h.temporal.schedule.getHandle(scheduleId).describe();
    expect(desc.policies.catchupWindow).toBe(120_000);
    expect(desc.action.workflowType).toBe('scheduleTrigger');
  });

  it('triggering twice in one window, and a manual trigger for it, yield one job per tenant', async () => {
    const window = windowContaining(Date.now(), { windowMs: DAY, windowOffsetMs: (decl.timing as { offset: number }).offset });
    const handle = h.temporal.schedule.getHandle(scheduleId);
    // Two triggers in the same second get the same trigger ID from the scheduler (it appends
    // the nominal time in whole seconds) and the second is dropped there: let a second pass.
    await handle.trigger('ALLOW_ALL');
    await waitFor(
      'the first trigger to fill the window',
      async () => (await getWindow(h.pool, 'digest', window.start))?.filled_at ?? undefined,
    );
    await waitFor(
      'a new second',
      async () =>
        Date.now() % 1_000 < 500 &&
        Date.now() - Date.parse((await getWindow(h.pool, 'digest', window.start))!.first_seen_at.toISOString()) > 1_000,
    );
    await handle.trigger('ALLOW_ALL');
    const seen = await waitFor('the second trigger', async () => {
      const w = await getWindow(h.pool, 'digest', window.start);
      return w && w.triggers >= 2 ? w : undefined;
    });
    expect(seen.first_source).toBe('schedule'); // the trigger read TemporalScheduledStartTime
    expect(seen.jobs).toBe(2);
    expect(await digestJobIds()).toEqual(expectedJobIds(window));

    // A manual start of the trigger (an operator, a script) for an instant in the same window.
    const manual = await h.temporal.workflow.execute('scheduleTrigger', {
      taskQueue: h.taskQueue,
      workflowId: `manual-trigger-${uid()}`,
      args: [
        {
          schedule: 'digest',
          scheduleId,
          jobType: 'digest',
          windowMs: DAY,
          windowOffsetMs: (decl.timing as { offset: number }).offset,
          windowStart: new Date().toISOString(),
        },
      ],
    });
    expect(manual).toMatchObject({ window, source: 'manual', firstTrigger: false });
    expect([...(manual as { jobIds: string[] }).jobIds].sort()).toEqual(expectedJobIds(window));
    expect((await getWindow(h.pool, 'digest', window.start))!.triggers).toBe(3);
    expect(await digestJobIds()).toEqual(expectedJobIds(window));

    // Each job ran once and sent its digest once.
    for (const [name, t] of Object.entries(TENANTS)) {
      const jobId = unkeyed.jobIdFor(t.id, 'digest', windowKey('digest', window));
      const job = await h.waitForStatus(jobId, 'succeeded', name as keyof typeof TENANTS);
      expect(job.result).toMatchObject({ periodEnd: window.start });
      expect((await h.simEffects()).byKey[`${jobId}:digest`]).toMatchObject({ applied: 1 });
    }
  });

  it("a backfill of an earlier window creates that window's jobs, once however often it runs", async () => {
    const offset = (decl.timing as { offset: number }).offset;
    const current = windowContaining(Date.now(), { windowMs: DAY, windowOffsetMs: offset });
    const previous = windowContaining(Date.parse(current.start) - 1, { windowMs: DAY, windowOffsetMs: offset });
    const handle = h.temporal.schedule.getHandle(scheduleId);
    // The range holds exactly one nominal time: the previous window's start.
    const range = {
      start: new Date(Date.parse(previous.start) - 60_000),
      end: new Date(Date.parse(previous.start) + 60_000),
      overlap: 'ALLOW_ALL' as const,
    };
    await handle.backfill([range]);
    await waitFor('the backfilled window', async () => (await getWindow(h.pool, 'digest', previous.start))?.filled_at ?? undefined);
    // The scheduler gives the repeat the same trigger ID (same nominal time) and drops it
    // while the first still runs; once that one closed, it runs and finds the jobs. Wait for
    // that run itself: `runningActions` stays empty for ALLOW_ALL actions on server 1.29, so it
    // proves nothing (the race seen on temporal-server).
    const triggerRunId = `${scheduleId}.run-${new Date(previous.start).toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
    await waitFor(
      "the first backfill's trigger run to close",
      async () => (await h.temporal.workflow.getHandle(triggerRunId).describe()).status.name !== 'RUNNING',
    );
    await handle.backfill([range]);
    await waitFor('the second backfill to be seen', async () => ((await getWindow(h.pool, 'digest', previous.start))?.triggers ?? 0) >= 2);
    expect(await digestJobIds()).toEqual([...expectedJobIds(current), ...expectedJobIds(previous)].sort());
    for (const jobId of expectedJobIds(previous)) {
      const desc = await h.temporal.workflow.getHandle(jobId).describe();
      expect(desc.type).toBe('digestJob');
    }
  });

  it('a manual trigger without windowStart fails instead of guessing from the wall clock', async () => {
    const err = await h.temporal.workflow
      .execute('scheduleTrigger', {
        taskQueue: h.taskQueue,
        workflowId: `manual-trigger-${uid()}`,
        args: [{ schedule: 'digest', scheduleId, jobType: 'digest', windowMs: DAY, windowOffsetMs: 0 }],
      })
      .then(
        () => undefined,
        (e: unknown) => e as { cause?: { message?: string } },
      );
    expect(err?.cause?.message).toContain('windowStart');
  });

  it('the shipped declarations (cron digest, interval scan) are accepted by Temporal', async () => {
    const prefix = `${h.taskQueue}-shipped`;
    try {
      const r = await ensureSchedules(h.temporal, h.taskQueue, SCHEDULE_DECLARATIONS, prefix);
      expect(r.map((x) => x.outcome)).toEqual(['created', 'created']);
      const digest = await h.temporal.schedule.getHandle(scheduleIdFor(prefix, 'digest')).describe();
      const next = digest.info.nextActionTimes[0]!;
      expect(next.getUTCHours()).toBe(2);
      expect(next.getUTCMinutes()).toBe(0);
      const scan = await h.temporal.schedule.getHandle(scheduleIdFor(prefix, 'compensation-scan')).describe();
      expect(scan.action.workflowType).toBe('compensationScan');
      expect(scan.action.args?.[0]).toMatchObject({ schedules: [{ scheduleId: scheduleIdFor(prefix, 'digest'), jobType: 'digest' }] });
      expect((await ensureSchedules(h.temporal, h.taskQueue, SCHEDULE_DECLARATIONS, prefix)).map((x) => x.outcome)).toEqual([
        'unchanged',
        'unchanged',
      ]);
    } finally {
      for (const d of SCHEDULE_DECLARATIONS)
        await h.temporal.schedule
          .getHandle(scheduleIdFor(prefix, d.name))
          .delete()
          .catch(() => undefined);
    }
  });

  it('intake refuses to take a digest over HTTP', async () => {
    const r = await h.submit('digest', {});
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('started by their schedule');
  });
});
