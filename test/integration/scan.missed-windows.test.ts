import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSchedules, scanInputFor, scheduleIdFor, type ScheduleDeclaration } from '../../services/schedules.js';
import { listWindows } from '../support/queries.js';
import type { ScanInput, ScanReport } from '../../contract/scan.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let h: Harness;
let decls: ScheduleDeclaration[];
beforeAll(async () => {
  h = await startHarness('scan-windows');
  // An hourly digest, declared paused: every window it should have fired is "missed".
  decls = [
    {
      kind: 'job',
      name: 'digest',
      jobType: 'digest',
      description: 'test hourly digest',
      timing: { every: HOUR },
      overlap: 'BUFFER_ALL',
      catchupWindowMs: MINUTE,
      paused: true,
    },
  ];
  await ensureSchedules(h.temporal, h.taskQueue, decls);
});
afterAll(async () => {
  await h?.temporal.schedule
    .getHandle(scheduleIdFor(h.taskQueue, 'digest'))
    .delete()
    .catch(() => undefined);
  await h?.close();
});

const runScan = (input: ScanInput) =>
  h.temporal.workflow.execute('compensationScan', {
    taskQueue: h.taskQueue,
    workflowId: `scan-${uid()}`,
    args: [input],
  }) as Promise<ScanReport>;

describe('compensation scan: missed schedule windows', () => {
  it('fills each window a paused schedule missed exactly once, however often it runs', async () => {
    const desc = await h.temporal.schedule.getHandle(scheduleIdFor(h.taskQueue, 'digest')).describe();
    expect(desc.state.paused).toBe(true);
    const created = desc.info.createdAt.getTime();
    // Pretend three hours and ten minutes have passed (an explicit "now", not the clock).
    const now = created + 3 * HOUR + 10 * MINUTE;
    const graceMs = 5 * MINUTE;
    const expected: string[] = [];
    for (let t = Math.ceil(created / HOUR) * HOUR; t < now - graceMs; t += HOUR) expected.push(new Date(t).toISOString());
    expect(expected.length).toBeGreaterThanOrEqual(3);

    const input = scanInputFor(decls, h.taskQueue, { now: new Date(now).toISOString(), windowGraceMs: graceMs });
    const first = await runScan(input);
    expect(first).toMatchObject({ windowsFilled: expected.length, errors: 0 });
    const windows = await listWindows(h.pool, 'digest');
    expect(windows.map((w) => w.window_start.toISOString())).toEqual(expected);
    expect(windows.every((w) => w.first_source === 'scan' && w.triggers === 1 && w.jobs === 2 && w.filled_at)).toBe(true);

    // Again, and twice at once: nothing new.
    const again = await Promise.all([runScan(input), runScan(input)]);
    expect(again.map((r) => r.windowsFilled)).toEqual([0, 0]);
    expect((await listWindows(h.pool, 'digest')).map((w) => w.triggers)).toEqual(expected.map(() => 1));
    const jobs = await h.pool.query<{ job_id: string }>(`SELECT job_id FROM job_intents WHERE job_type = 'digest'`);
    expect(jobs.rowCount).toBe(expected.length * 2);

    // Every filled window's jobs ran and sent their digest once.
    await waitFor(
      'every digest to succeed',
      async () => {
        const r = await h.pool.query(`SELECT 1 FROM job_intents WHERE job_type = 'digest' AND status <> 'succeeded'`);
        return r.rowCount === 0;
      },
      90_000,
    );
    const effects = await h.simEffects();
    for (const { job_id } of jobs.rows) expect(effects.byKey[`${job_id}:digest`]).toMatchObject({ applied: 1 });

    const runs = await h.pool.query<{ windows_filled: number }>('SELECT windows_filled FROM scan_runs ORDER BY finished_at');
    expect(runs.rows.map((r) => r.windows_filled).sort()).toEqual([0, 0, expected.length]);
  });
});
