import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('start-marks');
});
afterAll(async () => {
  await h?.close();
});

const marksOf = async (jobIds: string[]) =>
  (
    await h.pool.query<{ job_id: string; created_at: Date; workflow_started_at: Date | null }>(
      'SELECT job_id, created_at, workflow_started_at FROM job_intents WHERE job_id = ANY($1::text[])',
      [jobIds],
    )
  ).rows;

describe('intake: "workflow started" marks are written in batches', () => {
  it('writes the marks of a window in one go, each with the time its start returned; close() writes what is still gathering', async () => {
    // A window far longer than the test: only close() can have written the marks.
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: `tq-nobody-${uid()}`,
      startMarkWindowMs: 60_000,
    });
    const returned = new Map<string, number>();
    const submitted = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const r = await jobs.submitJob({
          tenantId: TENANTS.a.id,
          type: 'summarize',
          idempotencyKey: `mark-${i}-${uid()}`,
          input: { text: 'Marked later.' },
        });
        returned.set(r.jobId, Date.now());
        return r;
      }),
    );
    const ids = submitted.map((r) => r.jobId);
    expect(submitted.every((r) => r.status === 'queued' && !r.replayed)).toBe(true);
    // Every workflow runs, while no mark is written yet (the window is a minute long).
    for (const id of ids) expect((await h.temporal.workflow.getHandle(id).describe()).status.name).toBe('RUNNING');
    expect((await marksOf(ids)).map((r) => r.workflow_started_at)).toEqual([null, null, null, null, null]);

    // A concurrent request whose start failed removed one row meanwhile: its mark writes it again.
    await h.pool.query('DELETE FROM job_intents WHERE job_id = $1', [ids[0]]);
    const closedAt = Date.now();
    await jobs.close();
    const rows = await marksOf(ids);
    expect(rows).toHaveLength(5);
    for (const row of rows) {
      expect(row.workflow_started_at).toBeInstanceOf(Date);
      if (row.job_id === ids[0]) continue; // re-inserted: a new created_at, marked at once
      // The time its start returned, not the flush's: before the call returned (2 s for clock slack), and
      // after the intent was accepted.
      expect(row.workflow_started_at!.getTime()).toBeGreaterThanOrEqual(row.created_at.getTime());
      expect(row.workflow_started_at!.getTime()).toBeLessThan(Math.min(returned.get(row.job_id)! + 2_000, closedAt));
    }
    for (const id of ids) await h.temporal.workflow.getHandle(id).terminate('test done');
  });

  it('a duplicate of a job whose mark is still gathering: the same client answers at once; another starts (finds) it and writes the mark', async () => {
    const client = () =>
      createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, startMarkWindowMs: 60_000 });
    const [api1, api2] = [client(), client()];
    const req = { tenantId: TENANTS.a.id, type: 'summarize', idempotencyKey: `dup-${uid()}`, input: { text: 'Twice. Once.' } };
    const first = await api1.submitJob(req);
    // The client that started it knows the run exists: no second start, no mark of its own.
    expect(await api1.submitJob(req)).toMatchObject({ jobId: first.jobId, replayed: true });
    expect((await marksOf([first.jobId]))[0]?.workflow_started_at).toBeNull();
    // Another API process cannot know: it asks Temporal (USE_EXISTING finds the run) and marks it.
    expect(await api2.submitJob(req)).toMatchObject({ jobId: first.jobId, replayed: true });
    expect((await marksOf([first.jobId]))[0]?.workflow_started_at).toBeInstanceOf(Date);
    const done = await h.waitForStatus(first.jobId, 'succeeded');
    expect(done.attempts).toBe(1);
    await api1.close();
    await api2.close();
  });
});
