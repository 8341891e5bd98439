import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { unkeyed } from '../../lib/ids.js';
import { ensureSchedules, jobScheduleDeclarations, scanInputFor, scheduleIdFor } from '../../services/schedules.js';
import { windowKey } from '../../contract/schedule-window.js';
import type { ScanReport } from '../../contract/scan.js';
import { usageReportJobType } from '../fixtures/jobs/usage-report/activities.js';
import { getWindow, listWindows } from '../support/queries.js';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

// The worker, the intake and the Schedules know only this registry: one team's scheduled type,
// whose schedule is declared in its own definition and nowhere else.
const registry = createJobRegistry([usageReportJobType]);
const TYPE = 'usage-report';

let h: Harness;
let scheduleId: string;
beforeAll(async () => {
  h = await startHarness('triggers-schedule', { jobTypes: registry });
  scheduleId = scheduleIdFor(h.taskQueue, TYPE);
});
afterAll(async () => {
  await h?.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await h?.close();
});

describe('defineJob({ schedule }): a user-defined scheduled type', () => {
  it("becomes a Temporal Schedule with the definition's cron, window grid and catch-up window", async () => {
    const decls = jobScheduleDeclarations(registry);
    expect(decls.map((d) => d.name)).toEqual([TYPE]);
    expect(await ensureSchedules(h.temporal, h.taskQueue, decls)).toEqual([{ scheduleId, outcome: 'created' }]);
    const desc = await h.temporal.schedule.getHandle(scheduleId).describe();
    const next = desc.info.nextActionTimes[0]!;
    expect([next.getUTCHours(), next.getUTCMinutes()]).toEqual([3, 30]);
    expect(desc.policies.catchupWindow).toBe(3_600_000);
    expect(desc.action).toMatchObject({ type: 'startWorkflow', workflowType: 'scheduleTrigger' });
    expect((desc.action as { args?: unknown[] }).args?.[0]).toMatchObject({
      jobType: TYPE,
      windowMs: 24 * 3_600_000,
      windowOffsetMs: 3.5 * 3_600_000,
    });
  });

  it("the scan fills its missed windows: one job per tenant and window, with input(window), run by the registry's worker", async () => {
    const decls = jobScheduleDeclarations(registry);
    const now = Date.now();
    // Two days back: the Schedule did not exist then, so every firing in the range was missed.
    const input = scanInputFor(decls, h.taskQueue, {
      now: new Date(now).toISOString(),
      since: new Date(now - 2 * 86_400_000).toISOString(),
    });
    const run = (id: string) =>
      h.temporal.workflow.execute('compensationScan', { taskQueue: h.taskQueue, workflowId: id, args: [input] }) as Promise<ScanReport>;
    const first = await run(`scan-${uid()}`);
    expect(first.errors).toBe(0);
    const windows = await listWindows(h.pool, TYPE);
    expect(windows.length).toBeGreaterThanOrEqual(1);
    expect(first.windowsFilled).toBe(windows.length);
    for (const w of windows) {
      expect(w.window_start.toISOString().slice(11)).toBe('03:30:00.000Z');
      expect(w.jobs).toBe(Object.keys(TENANTS).length);
      for (const [name, t] of Object.entries(TENANTS)) {
        const window = { start: w.window_start.toISOString(), end: w.window_end.toISOString() };
        const jobId = unkeyed.jobIdFor(t.id, TYPE, windowKey(TYPE, window)); // windows are unkeyed (lib/ids.ts)
        const job = await h.waitForStatus(jobId, 'succeeded', name as keyof typeof TENANTS);
        // The input is the definition's input(window), validated by its schema.
        expect(job.result).toMatchObject({ day: window.start, until: window.end, format: 'csv' });
        expect((await h.simEffects()).byKey[`${jobId}:send-report`]).toMatchObject({ applied: 1 });
      }
    }
    // A second scan finds every window filled: nothing new.
    const again = await run(`scan-${uid()}`);
    expect(again).toMatchObject({ windowsFilled: 0, errors: 0 });
    const jobs = await h.pool.query(`SELECT 1 FROM job_intents WHERE job_type = $1`, [TYPE]);
    expect(jobs.rowCount).toBe(windows.length * Object.keys(TENANTS).length);
  });

  it('a manual trigger for an instant in a filled window finds its jobs instead of making new ones', async () => {
    const [w] = await listWindows(h.pool, TYPE);
    const manual = (await h.temporal.workflow.execute('scheduleTrigger', {
      taskQueue: h.taskQueue,
      workflowId: `manual-${uid()}`,
      args: [
        {
          schedule: TYPE,
          scheduleId,
          jobType: TYPE,
          windowMs: 24 * 3_600_000,
          windowOffsetMs: 3.5 * 3_600_000,
          windowStart: new Date(w!.window_start.getTime() + 60_000).toISOString(),
        },
      ],
    })) as { firstTrigger: boolean; jobIds: string[] };
    expect(manual.firstTrigger).toBe(false);
    expect(manual.jobIds).toHaveLength(Object.keys(TENANTS).length);
    expect((await getWindow(h.pool, TYPE, w!.window_start.toISOString()))!.triggers).toBe(2);
    const jobs = await h.pool.query(`SELECT 1 FROM job_intents WHERE job_type = $1`, [TYPE]);
    expect(jobs.rowCount).toBe((await listWindows(h.pool, TYPE)).length * Object.keys(TENANTS).length);
  });

  it('is refused over HTTP: its jobs are started by their schedule', async () => {
    const r = await h.submit(TYPE, { day: new Date().toISOString(), until: new Date().toISOString(), format: 'csv' });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('started by their schedule');
  });

  it('the scan leaves alone the windows that fired while an operator had the Schedule paused, and fills those around them', async () => {
    const now = Date.now();
    const DAY = 86_400_000;
    // An operator's pause from five days ago to three days ago, as the admin API audits it.
    for (const [action, ago] of [
      ['paused', 5],
      ['unpaused', 3],
    ] as const)
      await h.pool.query(
        `INSERT INTO schedule_actions (job_type, schedule_id, action, actor, reason, at) VALUES ($1, $2, $3, 'ops-ci', 'upstream migration', $4)`,
        [TYPE, scheduleId, action, new Date(now - ago * DAY)],
      );
    const before = new Set((await listWindows(h.pool, TYPE)).map((w) => w.window_start.toISOString()));
    const input = scanInputFor(jobScheduleDeclarations(registry), h.taskQueue, {
      now: new Date(now).toISOString(),
      since: new Date(now - 6 * DAY).toISOString(),
    });
    const report = (await h.temporal.workflow.execute('compensationScan', {
      taskQueue: h.taskQueue,
      workflowId: `scan-${uid()}`,
      args: [input],
    })) as ScanReport;
    expect(report.errors).toBe(0);
    const added = (await listWindows(h.pool, TYPE)).filter((w) => !before.has(w.window_start.toISOString()));
    // One daily firing in [6 d, 5 d) ago and one in [3 d, 2 d) ago; the two in between were paused.
    expect(report.windowsFilled).toBe(2);
    expect(added).toHaveLength(2);
    for (const w of added) {
      const firedAgo = now - w.window_start.getTime();
      expect(firedAgo < 3 * DAY || firedAgo >= 5 * DAY, `window ${w.window_start.toISOString()} fired during the pause`).toBe(true);
    }
  });
});
