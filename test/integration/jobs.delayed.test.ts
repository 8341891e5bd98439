import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyConflictError, ValidationError } from '../../lib/errors.js';
import { JobStateKey } from '../../lib/temporal.js';
import { inputHash, jobIdFor, keyHash } from '../../lib/ids.js';
import type { ScanInput, ScanReport } from '../../contract/scan.js';
import { insertIntent } from '../../store/intents.js';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('delayed');
});
afterAll(async () => {
  await h?.close();
});

const submitDelayed = (input: unknown, terms: Record<string, unknown>, key = `key-${uid()}`) =>
  h.api('/v1/jobs', { body: { type: 'summarize', input, ...terms }, headers: { 'idempotency-key': key } });

/** What a claim leaves behind: an upstream request, an attempt row, a lease row, a first start. */
async function evidence(jobId: string) {
  return {
    requests: (await h.simEffects()).byKey[`${jobId}:summarize`]?.requests ?? 0,
    attempts: (await h.pool.query('SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1', [jobId])).rows[0].n,
    leases: (await h.pool.query('SELECT count(*)::int AS n FROM activity_leases WHERE job_id = $1', [jobId])).rows[0].n,
    firstStartedAt: (await h.pool.query('SELECT first_started_at FROM job_intents WHERE job_id = $1', [jobId])).rows[0].first_started_at,
  };
}

describe('POST /v1/jobs with delaySeconds', () => {
  it('is scheduled with its time until then, starts no earlier, then runs like any job', async () => {
    const before = Date.now();
    const r = await submitDelayed({ text: 'Later, please.' }, { delaySeconds: 3 });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId as string;
    const at = Date.parse(r.body.scheduledFor);
    expect(at).toBeGreaterThanOrEqual(before + 3_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 3_000);
    expect(r.body.status).toBe('scheduled');
    // Poll when it is due, not every second.
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(2);

    const s = (await h.api(`/v1/jobs/${jobId}`)).body;
    expect(s).toMatchObject({ status: 'scheduled', scheduledFor: r.body.scheduledFor });
    expect(s.stage).toMatch(/^scheduled for /);
    expect((await h.api('/v1/jobs?state=scheduled')).body.jobs.map((j: { jobId: string }) => j.jobId)).toContain(jobId);
    // Temporal holds it as a delayed run: running, its execution time ahead, JobState scheduled.
    const desc = await h.temporal.workflow.getHandle(jobId).describe();
    expect(desc.status.name).toBe('RUNNING');
    expect(Math.abs(desc.executionTime!.getTime() - at)).toBeLessThan(1_000);
    expect(desc.typedSearchAttributes.get(JobStateKey)).toBe('scheduled');

    const done = await h.waitForStatus(jobId, 'succeeded');
    // Postgres' clock recorded the first start; the same host's Temporal held it until its time.
    expect(Date.parse(done.firstStartedAt)).toBeGreaterThanOrEqual(at);
    expect(done.scheduledFor).toBe(r.body.scheduledFor);
    // Queue time runs from its time, not from the submit: the delay it asked for is no backlog.
    expect(done.queuedMs).toBe(Date.parse(done.firstStartedAt) - at);
    expect((await evidence(jobId)).requests).toBe(1);
  });

  it('is idempotent like any submit: the same terms replay, another delay or runAt is a 422', async () => {
    const key = `key-${uid()}`;
    const input = { text: 'Twice, the same.' };
    const first = await submitDelayed(input, { delaySeconds: 600 }, key);
    expect(first.status).toBe(202);
    // A retry a moment later, with the same delaySeconds: the same intent, the same time.
    const again = await submitDelayed(input, { delaySeconds: 600 }, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ jobId: first.body.jobId, status: 'scheduled', scheduledFor: first.body.scheduledFor });
    for (const terms of [{ delaySeconds: 601 }, { runAt: first.body.scheduledFor }, {}]) {
      const r = await submitDelayed(input, terms, key);
      expect(r.status, JSON.stringify(terms)).toBe(422);
      expect(r.body.type).toBe('urn:durable-jobs:problem:idempotency-key-reused');
    }
    // Jobs without a delay keep their replays: their hash did not change.
    const plainKey = `key-${uid()}`;
    expect((await submitDelayed(input, {}, plainKey)).status).toBe(202);
    expect((await submitDelayed(input, {}, plainKey)).status).toBe(200);
    expect((await h.api(`/v1/jobs/${first.body.jobId}/cancel`, { method: 'POST' })).status).toBe(202);
  });

  it('answers bad terms with a 400 naming the field, and starts nothing', async () => {
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ runAt: new Date(Date.now() + 60_000).toISOString(), delaySeconds: 60 }, ['runAt', 'delaySeconds']],
      [{ delaySeconds: -1 }, ['delaySeconds']],
      [{ delaySeconds: 1.5 }, ['delaySeconds']],
      [{ delaySeconds: '60' }, ['delaySeconds']],
      [{ delaySeconds: 366 * 86_400 }, ['delaySeconds']],
      [{ runAt: new Date(Date.now() + 366 * 86_400_000).toISOString() }, ['runAt']],
      [{ runAt: '2030-01-01T09:00:00' }, ['runAt']],
      [{ runAt: 'tomorrow' }, ['runAt']],
      [{ tags: { 'bad key': 'x' } }, ['tags.bad key']],
      [{ tags: { k: 7 } }, ['tags.k']],
      [{ tags: { k: '' } }, ['tags.k']],
      [{ tags: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) }, ['tags']],
    ];
    for (const [terms, paths] of cases) {
      const key = `key-${uid()}`;
      const r = await submitDelayed({ text: 'Bad terms.' }, terms, key);
      expect(r.status, JSON.stringify(terms)).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      const got = r.body.errors.map((e: { path: string }) => e.path);
      for (const p of paths) expect(got, JSON.stringify(terms)).toContain(p);
      // Nothing was accepted under that key.
      expect(
        (
          await h.pool.query(
            "SELECT count(*)::int AS n FROM job_intents WHERE key_hash IS NOT NULL AND created_at > now() - interval '1 minute' AND input->>'text' = $1",
            ['Bad terms.'],
          )
        ).rows[0].n,
      ).toBe(0);
    }
    // A runAt already past starts the job at once (a retry after its time must still replay).
    const past = await submitDelayed({ text: 'Yesterday.' }, { runAt: new Date(Date.now() - 86_400_000).toISOString() });
    expect(past.status).toBe(202);
    expect(past.body.status).toBe('queued');
    expect(past.body).not.toHaveProperty('scheduledFor');
    await h.waitForStatus(past.body.jobId, 'succeeded');
  });
});

describe('cancelling a delayed job before its time', () => {
  it('records cancelled at once and the job never runs, while a job due after it does', async () => {
    const r = await submitDelayed({ text: 'Never mind.' }, { delaySeconds: 4 });
    const jobId = r.body.jobId as string;
    expect(r.body.status).toBe('scheduled');
    const c = await h.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST' });
    expect(c.status).toBe(202);
    // The cancel request wakes the delayed run at once: cancelled before its time, not at it.
    const cancelled = await h.waitForStatus(jobId, 'cancelled');
    expect(Date.parse(cancelled.finishedAt)).toBeLessThan(Date.parse(r.body.scheduledFor));
    await expect(h.temporal.workflow.getHandle(jobId).result()).rejects.toThrow();
    expect((await h.temporal.workflow.getHandle(jobId).describe()).status.name).toBe('CANCELLED');
    // A probe due a second after the cancelled job's time runs: that time has passed with a
    // worker polling, and the cancelled job left no trace of a claim.
    const probe = await submitDelayed({ text: 'I run.' }, { runAt: new Date(Date.parse(r.body.scheduledFor) + 1_000).toISOString() });
    await h.waitForStatus(probe.body.jobId, 'succeeded');
    expect(await evidence(jobId)).toEqual({ requests: 0, attempts: 0, leases: 0, firstStartedAt: null });
    expect((await h.api(`/v1/jobs/${jobId}`)).body.status).toBe('cancelled');
  });
});

describe('submitJob in the typed client with runAt', () => {
  it('schedules, replays the same runAt, and refuses another runAt or a bad one', async () => {
    const runAt = new Date(Date.now() + 2_500);
    const req = {
      tenantId: TENANTS.a.id,
      type: 'summarize',
      idempotencyKey: `key-${uid()}`,
      input: { text: 'From the client, later.' },
      runAt,
      tags: { source: 'client' },
    };
    const r = await h.jobs.submitJob(req);
    expect(r).toMatchObject({ status: 'scheduled', replayed: false, scheduledFor: runAt.toISOString() });
    // The same instant written another way is the same intent.
    const iso = runAt.toISOString().replace('Z', '+00:00');
    expect(await h.jobs.submitJob({ ...req, runAt: iso })).toMatchObject({ jobId: r.jobId, replayed: true });
    await expect(h.jobs.submitJob({ ...req, runAt: new Date(runAt.getTime() + 1_000) })).rejects.toThrow(IdempotencyConflictError);
    const bad = await h.jobs.submitJob({ ...req, idempotencyKey: `key-${uid()}`, delaySeconds: 5 }).catch((e: ValidationError) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).fields.map((f) => f.path).sort()).toEqual(['delaySeconds', 'runAt']);
    expect((await h.jobs.getJob(TENANTS.a.id, r.jobId)).status).toBe('scheduled');
    const done = await h.waitForStatus(r.jobId, 'succeeded');
    expect(Date.parse(done.firstStartedAt)).toBeGreaterThanOrEqual(runAt.getTime());
    expect(done.tags).toEqual({ source: 'client' });
  });
});

describe('a delayed job whose start was lost', () => {
  /** What a lost start leaves: the committed intent with its time, workflow_started_at NULL. */
  async function lostStart(key: string, delaySeconds: number, input: { text: string }) {
    const tenantId = TENANTS.a.id;
    const jobId = jobIdFor(tenantId, 'summarize', key);
    const runAt = new Date(Date.now() + delaySeconds * 1000);
    await insertIntent(h.pool, {
      jobId,
      tenantId,
      jobType: 'summarize',
      keyHash: keyHash(tenantId, key),
      inputHash: inputHash('summarize', input, { delaySeconds }),
      input,
      priority: 'normal',
      runAt,
    });
    return { jobId, runAt };
  }
  const executionTime = async (jobId: string) => (await h.temporal.workflow.getHandle(jobId).describe()).executionTime!.getTime();

  it('is started with its delay by the retried submit and by the compensation scan, never at once', async () => {
    const key = `key-${uid()}`;
    const input = { text: 'Lost, then retried.' };
    const retried = await lostStart(key, 600, input);
    const again = await submitDelayed(input, { delaySeconds: 600 }, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ jobId: retried.jobId, status: 'scheduled', scheduledFor: retried.runAt.toISOString() });
    expect(Math.abs((await executionTime(retried.jobId)) - retried.runAt.getTime())).toBeLessThan(1_000);

    const scanned = await lostStart(`key-${uid()}`, 600, { text: 'Lost, then scanned.' });
    const report = (await h.temporal.workflow.execute('compensationScan', {
      taskQueue: h.taskQueue,
      workflowId: `scan-${uid()}`,
      args: [
        { schedules: [], now: new Date(Date.now() + 3_600_000).toISOString(), effectLeaseMs: 2 * 3_600_000 } satisfies Partial<ScanInput>,
      ],
    })) as ScanReport;
    expect(report.intentsStarted).toBeGreaterThanOrEqual(1);
    expect(Math.abs((await executionTime(scanned.jobId)) - scanned.runAt.getTime())).toBeLessThan(1_000);
    expect((await h.api(`/v1/jobs/${scanned.jobId}`)).body.status).toBe('scheduled');
    for (const { jobId } of [retried, scanned]) {
      await h.api(`/v1/jobs/${jobId}/cancel`, { method: 'POST' });
      await h.waitForStatus(jobId, 'cancelled');
    }
  });
});
