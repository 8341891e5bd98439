// The console's Schedules page (issue 38 §8), over HTTP and in a real browser: a scheduled
// type's Temporal Schedule and its state; pause / unpause with a reason (audited), trigger now
// (the window's jobs appear), backfill a bounded range (jobs for its windows), and the windows
// with their state: filled, late-filled by the compensation scan, skipped with the reason. A
// viewer reads all of it and is refused every action.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { createSchedulesAdmin } from '../../client/index.js';
import { ensureSchedules, jobScheduleDeclarations, scanInputFor, scheduleIdFor } from '../../services/schedules.js';
import type { ScanReport } from '../../contract/scan.js';
import { usageReportJobType } from '../fixtures/jobs/usage-report/activities.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';
import {
  ARTIFACTS,
  OPERATOR_KEY,
  VIEWER_KEY,
  WAIT,
  expectProblemNaming,
  openPage,
  startConsoleStack,
  textMatches,
  visibleButtons,
  type ConsoleStack,
} from '../support/console-ops.js';

declare const document: { querySelectorAll(s: string): ArrayLike<{ dataset: Record<string, string> }> };

// The fixture's type under a name of its own: window job IDs derive from the type's name, the
// tenant and the window, so this file's windows (the same days, the same tenants) never collide
// with triggers.schedule's when the two files run at once against the shared Temporal and Postgres.
const registry = createJobRegistry([
  { ...usageReportJobType, definition: { ...usageReportJobType.definition, name: 'usage-report-console' } },
]);
const CLI = fileURLToPath(new URL('../../scripts/durable-jobs.ts', import.meta.url));

/** `durable-jobs schedules …` against this file's API, as the operator. */
function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, DJ_API_URL: c.base, ADMIN_API_KEY: OPERATOR_KEY };
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'schedules', ...args], { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}
const TYPE = 'usage-report-console';
const DAY = 86_400_000;

let h: Harness;
let c: ConsoleStack;
let scheduleId: string;
beforeAll(async () => {
  h = await startHarness('console-schedules', { jobTypes: registry });
  scheduleId = scheduleIdFor(h.taskQueue, TYPE);
  await ensureSchedules(h.temporal, h.taskQueue, jobScheduleDeclarations(registry));
  c = await startConsoleStack(h, registry);
});
afterAll(async () => {
  await h?.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await c?.close();
  await h?.close();
});

const jobsOf = async (ids: string[]) =>
  (await h.pool.query<{ job_id: string }>(`SELECT job_id FROM job_intents WHERE job_id = ANY($1)`, [ids])).rows.length;

/** The page's window rows: start → state. */
const windowStates = (page: Page) =>
  page.evaluate(() =>
    Object.fromEntries(
      Array.from(document.querySelectorAll('#sch-windows tbody tr[data-start]')).map((tr) => [tr.dataset.start!, tr.dataset.state!]),
    ),
  );

describe('schedules over HTTP', () => {
  it('refuses bad input with a problem naming the field, an unknown type with 404, and a viewer every action', async () => {
    const now = Date.now();
    const path = `/v1/admin/schedules/${TYPE}`;
    expectProblemNaming(await c.call('POST', `${path}/pause`, {}), 400, 'reason');
    expectProblemNaming(await c.call('POST', `${path}/backfill`, { from: 'yesterday', to: new Date(now).toISOString() }), 400, 'from');
    // A range over the stated limit (100 windows of a day) names `to`, and starts nothing.
    const tooLong = await c.call('POST', `${path}/backfill`, {
      from: new Date(now - 200 * DAY).toISOString(),
      to: new Date(now).toISOString(),
    });
    expectProblemNaming(tooLong, 400, 'to');
    expect(tooLong.body.errors[0].message).toMatch(/more than 100 windows/);
    expectProblemNaming(
      await c.call('POST', `${path}/backfill`, { from: new Date(now).toISOString(), to: new Date(now + DAY).toISOString() }),
      400,
      'to',
    );
    expectProblemNaming(
      await c.call('POST', `${path}/backfill`, { from: new Date(now - DAY).toISOString(), to: new Date(now - 2 * DAY).toISOString() }),
      400,
      'from',
    );
    expectProblemNaming(await c.call('GET', `${path}/windows?from=${new Date(now - 300 * DAY).toISOString()}`), 400, 'from');
    expectProblemNaming(await c.call('GET', `${path}/windows?state=filled`), 400, 'state');
    expect((await c.call('GET', '/v1/admin/schedules/no-such-type')).status).toBe(404);
    for (const action of ['pause', 'unpause', 'trigger', 'backfill'])
      expect((await c.call('POST', `${path}/${action}`, { reason: 'x' }, VIEWER_KEY)).status, action).toBe(403);
    expect((await h.pool.query(`SELECT 1 FROM schedule_actions`)).rowCount).toBe(0);
    expect((await h.pool.query(`SELECT 1 FROM job_intents`)).rowCount).toBe(0);
    const list = await c.call('GET', '/v1/admin/schedules', undefined, VIEWER_KEY);
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([
      expect.objectContaining({ name: TYPE, scheduleId, perTenant: true, state: expect.objectContaining({ exists: true, paused: false }) }),
    ]);
  });
});

describe('schedules in the client', () => {
  it('validates like the API (a problem naming the field, nothing started) and pauses and unpauses under its actor', async () => {
    const admin = createSchedulesAdmin({ pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, actor: 'client-ci', jobs: registry });
    expect((await admin.list()).items.map((s) => s.name)).toEqual([TYPE]);
    await expect(admin.pause(TYPE, ' ')).rejects.toMatchObject({ fields: [expect.objectContaining({ path: 'reason' })] });
    const now = Date.now();
    await expect(
      admin.backfill(TYPE, { from: new Date(now - 200 * DAY).toISOString(), to: new Date(now).toISOString() }),
    ).rejects.toMatchObject({
      fields: [expect.objectContaining({ path: 'to', message: expect.stringMatching(/more than 100 windows/) })],
    });
    await expect(admin.windows(TYPE, { from: 'last week' })).rejects.toMatchObject({ fields: [expect.objectContaining({ path: 'from' })] });
    expect((await h.pool.query(`SELECT 1 FROM job_intents`)).rowCount).toBe(0);
    expect((await admin.pause(TYPE, 'client pause')).state).toMatchObject({ paused: true, note: 'paused by client-ci: client pause' });
    expect((await admin.unpause(TYPE, 'client resume')).state).toMatchObject({ paused: false });
    expect((await admin.show(TYPE)).actions.map((a) => [a.action, a.actor])).toEqual([
      ['unpaused', 'client-ci'],
      ['paused', 'client-ci'],
    ]);
  });
});

describe('the Schedules page in a browser', () => {
  it('pauses and unpauses with a reason, triggers now, backfills, and shows filled, late-filled and skipped windows', async () => {
    const { context, page } = await c.signedIn(OPERATOR_KEY);
    await openPage(page, '#schedules');
    await textMatches(page, '#sch-list tbody', new RegExp(`${TYPE}active`));
    await page.click(`#sch-list tbody tr[data-schedule="${TYPE}"] a`);
    await textMatches(page, '#sch-name', new RegExp(TYPE));

    // Pause with a reason: Temporal's Schedule is paused, its note names the operator, the audit has the row.
    await page.fill('#sch-pause input[name=reason]', 'upstream report API in maintenance');
    await page.click('#sch-pause-btn');
    await textMatches(page, '#sch-state', /paused/);
    await textMatches(page, '#sch-fields', /paused by otto: upstream report API in maintenance/);
    expect((await h.temporal.schedule.getHandle(scheduleId).describe()).state.paused).toBe(true);
    await textMatches(page, '#sch-actions tbody', /pausedottoupstream report API in maintenance/);
    await page.fill('#sch-pause input[name=reason]', 'maintenance over');
    await page.click('#sch-unpause-btn');
    await textMatches(page, '#sch-state', /active/);
    expect((await h.temporal.schedule.getHandle(scheduleId).describe()).state.paused).toBe(false);
    await textMatches(page, '#sch-actions tbody', /unpausedottomaintenance over/);

    // Trigger now: the current window's jobs (one per tenant) appear.
    await page.click('#sch-trigger-btn');
    const triggered = await textMatches(page, '#sch-action-result', /triggered: window .* job\(s\) \S+/);
    const triggerJobs = triggered.replace(/^.*job\(s\) /, '').split(', ');
    expect(triggerJobs.length).toBe(2);
    await waitFor('the triggered window has its jobs', async () => (await jobsOf(triggerJobs)) === 2, WAIT);
    const [, day, time] = /window (\S+) (\d\d:\d\d:\d\dZ)/.exec(triggered)!;
    const current = Date.parse(`${day}T${time}`);

    // Backfill three past windows: a job per tenant for each.
    await page.fill('#sch-backfill input[name=from]', new Date(current - 3 * DAY - 600_000).toISOString());
    await page.fill('#sch-backfill input[name=to]', new Date(current - DAY + 600_000).toISOString());
    await page.click('#sch-backfill-btn');
    await textMatches(page, '#sch-action-result', /backfill started: 3 window\(s\)/);
    const backfilled = [1, 2, 3].map((d) => new Date(current - d * DAY).toISOString());
    await waitFor(
      'the backfilled windows are filled',
      async () => {
        const r = await h.pool.query(
          `SELECT 1 FROM schedule_windows WHERE job_type = $1 AND window_start = ANY($2) AND filled_at IS NOT NULL`,
          [TYPE, backfilled],
        );
        return r.rowCount === 3;
      },
      WAIT,
    );
    expect((await h.pool.query(`SELECT 1 FROM job_intents WHERE job_type = $1`, [TYPE])).rowCount).toBe(2 * 4);

    // The compensation scan fills two missed windows before them: late-filled.
    const input = scanInputFor(jobScheduleDeclarations(registry), h.taskQueue, {
      now: new Date().toISOString(),
      since: new Date(current - 5 * DAY - 600_000).toISOString(),
    });
    const report = (await h.temporal.workflow.execute('compensationScan', {
      taskQueue: h.taskQueue,
      workflowId: `scan-${uid()}`,
      args: [input],
    })) as ScanReport;
    expect(report).toMatchObject({ windowsFilled: 2, errors: 0 });

    await page.click('#sch-windows-form button[type=submit]');
    const iso = (d: number) => new Date(current - d * DAY).toISOString();
    await page.waitForFunction(
      (s) => document.querySelectorAll(`#sch-windows tbody tr[data-start="${s}"][data-state="late-filled"]`).length === 1,
      iso(5),
      { timeout: WAIT, polling: 250 },
    );
    const states = await windowStates(page);
    expect(states).toMatchObject({
      [iso(0)]: 'filled',
      [iso(1)]: 'filled',
      [iso(3)]: 'filled',
      [iso(4)]: 'late-filled',
      [iso(5)]: 'late-filled',
      // Before the Schedule existed (the scan fills from its creation on) and past the scan's 7-day lookback.
      [iso(6)]: 'skipped',
      [iso(10)]: 'skipped',
    });
    const text = (await page.textContent('#sch-windows tbody')) ?? '';
    expect(text).toMatch(/the compensation scan found it missed and started its jobs/);
    expect(text).toMatch(/older than the scan's fill lookback \(7 d\)/);
    expect(text).toMatch(/before the Schedule was created/);
    await textMatches(page, '#sch-actions tbody', /backfilledotto/);
    await page.screenshot({ path: `${ARTIFACTS}schedules.png`, fullPage: true });
    await context.close();
    expect(c.pageErrors).toEqual([]);
  });

  it('a viewer sees the schedule and its windows but no action button', async () => {
    const { context, page } = await c.signedIn(VIEWER_KEY);
    await openPage(page, `#schedules/${TYPE}`);
    await textMatches(page, '#sch-windows tbody', /filled/);
    expect(await page.isVisible('#sch-pause-btn')).toBe(false);
    expect(await page.isVisible('#sch-trigger-btn')).toBe(false);
    expect(await page.isVisible('#sch-backfill-btn')).toBe(false);
    for (const b of await visibleButtons(page)) expect(['Sign out', 'Show'], `visible to a viewer: ${b}`).toContain(b);
    await context.close();
  });
});

describe('durable-jobs schedules', () => {
  it('lists the windows with their state and refuses a backfill over the limit, naming the field', async () => {
    const windows = await cli(['windows', TYPE]);
    expect(windows.code, windows.err).toBe(0);
    expect(windows.out).toMatch(/late-filled/);
    expect(windows.out).toMatch(/skipped .*older than the scan's fill lookback/);
    const now = Date.now();
    const tooLong = await cli(['backfill', TYPE, '--from', new Date(now - 200 * DAY).toISOString(), '--to', new Date(now).toISOString()]);
    expect(tooLong.code).toBe(1);
    expect(tooLong.err).toMatch(/to: the range covers more than 100 windows/);
    const list = await cli(['list']);
    expect(list.out).toMatch(new RegExp(`${TYPE}\\s+active`));
  });
});
