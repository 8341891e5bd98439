import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStateKey } from '../../lib/temporal.js';
import { ADMIN_KEY, OPERATORS, operatorKey, startHarness, type OperatorName, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
let lowJobId: string;
beforeAll(async () => {
  h = await startHarness('degradation-pause');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) =>
  h.api(path, {
    ...init,
    tenant: null,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(init.rawBody ? { 'content-type': 'application/json' } : {}), ...init.headers },
  });
/** As a named operator: the key names who acted (ADMIN_API_KEYS), never a header. */
const put = (body: unknown, as?: OperatorName, headers: Record<string, string> = {}) =>
  admin('/v1/admin/degradation', {
    method: 'PUT',
    body,
    headers: { ...(as ? { authorization: `Bearer ${operatorKey(as)}` } : {}), ...headers },
  });
const VALIDATION = 'urn:durable-jobs:problem:validation-error';

describe('GET|PUT /v1/admin/degradation', () => {
  it('needs the admin key and answers precise 400 problems, changing nothing', async () => {
    expect((await h.api('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } })).status).toBe(401);
    const cases: Array<[unknown, string]> = [
      [{}, 'pausedPriorities'],
      [{ pausedPriorities: 'low' }, 'pausedPriorities'],
      [{ pausedPriorities: ['urgent'] }, 'pausedPriorities.0'],
      [{ pausedPriorities: ['low', 'low'] }, 'pausedPriorities'],
      [{ pausedPriorities: [], recoveryRatePerMinute: 0 }, 'recoveryRatePerMinute'],
      [{ pausedPriorities: [], recoveryRatePerMinute: 1.5 }, 'recoveryRatePerMinute'],
      [{ pausedPriorities: [], recoveryRatePerMinute: '60' }, 'recoveryRatePerMinute'],
      [{ pausedPriorities: [], recoveryRatePerMinute: 10_001 }, 'recoveryRatePerMinute'],
      [{ pausedPriorities: [], paused: true }, 'paused'],
      [[], '(body)'],
    ];
    for (const [body, path] of cases) {
      const r = await put(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.type).toBe(VALIDATION);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expect((await put({ pausedPriorities: ['low', 'low'] })).body.errors[0].message).toBe('must not name a priority twice');
    expect((await admin('/v1/admin/degradation', { method: 'PUT', rawBody: '{"pausedPriorities": [' })).status).toBe(400);
    // X-Operator no longer names anyone: claiming another name than the key's is refused.
    for (const claimed of [' ', 'alice', 'admin']) {
      const r = await put({ pausedPriorities: ['low'] }, 'bob', { 'x-operator': claimed });
      expect(r.status, claimed).toBe(400);
      expect(r.body.errors[0].path).toBe('X-Operator');
    }
    // A tenant key never opens an admin route, not even with a name in X-Operator.
    const tenant = await h.api('/v1/admin/degradation', {
      method: 'PUT',
      body: { pausedPriorities: ['low'] },
      headers: { 'x-operator': 'alice' },
    });
    expect(tenant.status).toBe(401);
    expect(tenant.body.detail).toMatch(/not an admin key/);
    const g = await admin('/v1/admin/degradation');
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ pausedPriorities: [], recoveryRatePerMinute: 60, audit: [] });
  });

  it('pausing low: low jobs are accepted and deferred with why and since when; high and normal run', async () => {
    const p = await put({ pausedPriorities: ['low'], recoveryRatePerMinute: 600, reason: 'provider brown-out' }, 'alice');
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ pausedPriorities: ['low'], recoveryRatePerMinute: 600, updatedBy: 'alice' });
    const since = p.body.pausedSince.low;
    expect(since).toMatch(/Z$/);

    const low = await h.submit('summarize', { text: 'low priority' }, { priority: 'low' });
    expect(low.status).toBe(202);
    lowJobId = low.body.jobId;
    const deferred = await h.waitForStatus(low.body.jobId, 'deferred');
    expect(deferred.statusReason).toBe(
      `low-priority work is paused by an operator since ${since}; it resumes at 600/min once the pause is lifted`,
    );
    // The tenant learns that an operator paused it, never which one (a name may be an e-mail address).
    expect(JSON.stringify(deferred)).not.toContain('alice');
    expect(Date.parse(deferred.deferredSince)).toBeGreaterThanOrEqual(Date.parse(deferred.createdAt));
    expect(deferred.updatedAt).toMatch(/Z$/);
    expect(deferred.nextPollSeconds).toBeGreaterThan(0);

    const normal = await h.submit('summarize', { text: 'normal priority' });
    const high = await h.submit('summarize', { text: 'high priority' }, { priority: 'high' });
    await h.waitForStatus(normal.body.jobId, 'succeeded');
    await h.waitForStatus(high.body.jobId, 'succeeded');

    // The deferral is visible in Temporal too, and the low job never reached the provider.
    await waitFor('JobState=deferred on the workflow', async () => {
      const d = await h.temporal.workflow.getHandle(low.body.jobId).describe();
      return d.status.name === 'RUNNING' && d.typedSearchAttributes.get(JobStateKey) === 'deferred';
    });
    expect((await h.simEffects()).byKey[`${low.body.jobId}:summarize`]).toBeUndefined();
    expect((await h.api(`/v1/jobs/${low.body.jobId}`)).body.status).toBe('deferred');

    // Re-sending the same pause keeps its "since"; every change is audited.
    // Bob's key, with X-Operator naming himself (older CLIs send it): accepted, audited as bob.
    const again = await put({ pausedPriorities: ['low'] }, 'bob', { 'x-operator': 'bob' });
    expect(again.body.pausedSince.low).toBe(since);
    expect(again.body.recoveryRatePerMinute).toBe(600);
    const g = await admin('/v1/admin/degradation');
    expect(g.body.deferredJobs).toEqual({ low: 1 });
    expect(g.body.audit).toHaveLength(2);
    expect(g.body.audit[1]).toMatchObject({
      actor: 'alice',
      reason: 'provider brown-out',
      before: { pausedPriorities: [] },
      after: { pausedPriorities: ['low'] },
    });
    expect(g.body.audit[1].keyId).toMatch(/^[0-9a-f]{12}$/);
    expect(g.body.audit[0]).toMatchObject({ actor: 'bob', reason: null });

    const hq = (await admin('/v1/admin/queue-health')).body;
    expect(hq.backlog.deferred).toBe(1);
    expect(hq.degradation.resume.words).toBe('1 deferred, once low is resumed at 600/min: less than 1 s');
    const m = await fetch(`${h.opsUrl}/metrics`).then((r) => r.text());
    expect(m).toContain('durable_jobs_degradation_paused{priority="low"} 1');
    expect(m).toContain('durable_jobs_backlog_jobs{job_type="summarize",state="deferred"} 1');
  });

  it('a deferred job can be cancelled and is never run', async () => {
    const r = await h.submit('summarize', { text: 'cancel me while deferred' }, { priority: 'low' });
    await h.waitForStatus(r.body.jobId, 'deferred');
    expect((await h.api(`/v1/jobs/${r.body.jobId}/cancel`, { method: 'POST' })).status).toBe(202);
    await h.waitForStatus(r.body.jobId, 'cancelled');
    expect((await h.simEffects()).byKey[`${r.body.jobId}:summarize`]).toBeUndefined();
  });

  it('lifting the pause resumes deferred jobs; the status says how long they were deferred', async () => {
    const deferredNow = (await admin('/v1/admin/degradation')).body.deferredJobs.low;
    expect(deferredNow).toBe(1);
    const jobId = lowJobId;
    // Alice's second key (rotation) names her too.
    const off = await admin('/v1/admin/degradation', {
      method: 'PUT',
      body: { pausedPriorities: [] },
      headers: { authorization: `Bearer ${OPERATORS.alice[1]}` },
    });
    expect(off.status).toBe(200);
    expect(off.body.updatedBy).toBe('alice');
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.deferredMs).toBeGreaterThan(0);
    expect(done.queuedMs).toBeGreaterThanOrEqual(done.deferredMs);
    expect(done.deferredSince).toBeUndefined();
    expect(done.statusReason).toBeUndefined();
    expect((await admin('/v1/admin/degradation')).body.audit).toHaveLength(3);
  });
});
