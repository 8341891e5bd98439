import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('stale-result');
});
afterAll(async () => {
  // Let the deferred jobs run to the end rather than leave them waiting on the shared server.
  await h
    ?.api('/v1/admin/degradation', {
      method: 'PUT',
      tenant: null,
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      body: { pausedPriorities: [] },
    })
    .catch(() => undefined);
  await h?.close();
});

const pause = (pausedPriorities: string[]) =>
  h.api('/v1/admin/degradation', {
    method: 'PUT',
    tenant: null,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
    body: { pausedPriorities, recoveryRatePerMinute: 600 },
  });
const status = (jobId: string, query = '', tenant: 'a' | 'b' = 'a') => h.api(`/v1/jobs/${jobId}${query}`, { tenant });

describe('a stale result, only on request and always labelled', () => {
  const text = `The same text, asked twice ${uid()}.`;
  let first: { jobId: string; result: unknown; finishedAt: string };
  let deferredJob: string;

  it('a deferred job offers the last successful result of the same input, labelled with its time, never as its result', async () => {
    const r1 = await h.submit('summarize', { text });
    const done = await h.waitForStatus(r1.body.jobId, 'succeeded');
    first = { jobId: done.jobId, result: done.result, finishedAt: done.finishedAt };
    expect(first.finishedAt).toMatch(/Z$/);

    expect((await pause(['low'])).status).toBe(200);
    const r2 = await h.submit('summarize', { text }, { priority: 'low' });
    deferredJob = r2.body.jobId;
    await h.waitForStatus(deferredJob, 'deferred');

    const s = await status(deferredJob, '?allowStale=true');
    expect(s.status).toBe(200);
    expect(s.body.status).toBe('deferred');
    expect(s.body.result).toBeUndefined();
    expect(s.body.staleResult).toEqual({ stale: true, result: first.result, at: first.finishedAt, fromJobId: first.jobId });

    // Without the flag (or with false) nothing stale is shown.
    expect((await status(deferredJob)).body.staleResult).toBeUndefined();
    expect((await status(deferredJob, '?allowStale=false')).body.staleResult).toBeUndefined();
    // The succeeded job itself never carries a stale result: it has its own.
    const own = await status(first.jobId, '?allowStale=true');
    expect(own.body.staleResult).toBeUndefined();
    expect(own.body.result).toEqual(first.result);
  });

  it('an invalid allowStale is a 400 problem', async () => {
    for (const q of ['?allowStale=yes', '?allowStale=1', '?allowStale=', '?allowStale=true&allowStale=true']) {
      const r = await status(deferredJob, q);
      expect(r.status, q).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(r.body.type).toBe('urn:durable-jobs:problem:validation-error');
      expect(r.body.errors[0].path).toBe('allowStale');
    }
  });

  it("another input, or another tenant's identical input: no stale result", async () => {
    const other = await h.submit('summarize', { text: `${text} (different)` }, { priority: 'low' });
    await h.waitForStatus(other.body.jobId, 'deferred');
    expect((await status(other.body.jobId, '?allowStale=true')).body.staleResult).toBeUndefined();

    const b = await h.submit('summarize', { text }, { priority: 'low', tenant: 'b' });
    await h.waitForStatus(b.body.jobId, 'deferred', 'b');
    const sb = await status(b.body.jobId, '?allowStale=true', 'b');
    expect(sb.status).toBe(200);
    expect(sb.body.staleResult).toBeUndefined();
    // And tenant b cannot read tenant a's job at all.
    expect((await status(deferredJob, '?allowStale=true', 'b')).status).toBe(404);
  });

  it('a type that does not allow a stale result never shows one', async () => {
    const input = { amountCents: 500, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'buyer@example.com' };
    const p1 = await h.submit('purchase', input);
    await h.waitForStatus(p1.body.jobId, 'succeeded');
    const p2 = await h.submit('purchase', input, { priority: 'low' });
    await h.waitForStatus(p2.body.jobId, 'deferred');
    const s = await status(p2.body.jobId, '?allowStale=true');
    expect(s.status).toBe(200);
    expect(s.body.staleResult).toBeUndefined();
  });

  it('a retrying job shows the labelled stale result; once it succeeds, only its own result', async () => {
    expect((await pause([])).status).toBe(200);
    // The low jobs deferred above are admitted now: let them finish first, or their upstream
    // calls take this job's two 503s and it never retries (CI saw that once).
    await waitFor('the jobs deferred earlier to finish', async () => {
      const r = await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM job_intents WHERE finished_at IS NULL`);
      return r.rows[0]!.n === 0;
    });
    await h.simFault({ path: '/v1/summaries', times: 2, status: 503, retryAfter: '3' });
    const r = await h.submit('summarize', { text });
    const retrying = await h.waitForStatus(r.body.jobId, 'retrying');
    expect(retrying.staleResult).toBeUndefined();
    const s = await status(r.body.jobId, '?allowStale=true');
    // The newest succeeded job of the same input: the first one (the deferred ones may finish meanwhile).
    expect(s.body.staleResult).toMatchObject({ stale: true, at: expect.stringMatching(/Z$/) });
    expect(s.body.staleResult.fromJobId).not.toBe(r.body.jobId);
    expect(Date.parse(s.body.staleResult.at)).toBeGreaterThanOrEqual(Date.parse(first.finishedAt));
    expect(s.body.result).toBeUndefined();

    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    const after = await status(r.body.jobId, '?allowStale=true');
    expect(after.body.staleResult).toBeUndefined();
    expect(after.body.result).toEqual(done.result);
  });

  it('the client library offers the same, only when asked', async () => {
    expect((await pause(['low'])).status).toBe(200);
    const r = await h.submit('summarize', { text }, { priority: 'low' });
    await h.waitForStatus(r.body.jobId, 'deferred');
    const plain = await h.jobs.getJob('tenant-a', r.body.jobId);
    expect(plain.staleResult).toBeUndefined();
    const withStale = await h.jobs.getJob('tenant-a', r.body.jobId, { allowStale: true });
    expect(withStale.staleResult).toMatchObject({ stale: true, fromJobId: expect.any(String) });
    expect(withStale.result).toBeUndefined();
  });
});
