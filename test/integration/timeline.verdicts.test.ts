// The job timeline's stage verdicts, each produced by a real fault on real Temporal and
// Postgres: no worker, a held upstream, a 400, a failing notification, a deferral, a replay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
// No worker at first: the "no worker" test needs a task queue nobody polls; it starts one.
beforeAll(async () => {
  h = await startHarness('timeline', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } });
const timeline = async (jobId: string) => {
  const r = await admin(`/v1/admin/jobs/${jobId}/timeline`);
  expect(r.status).toBe(200);
  return r.body;
};
/** Waits until the timeline's verdict matches (the job moves through stages on its own). */
const verdictMatching = (jobId: string, re: RegExp, timeoutMs?: number) =>
  waitFor(
    `timeline verdict of ${jobId} to match ${re}`,
    async () => {
      const t = await timeline(jobId);
      return re.test(t.verdict.words) ? t : undefined;
    },
    timeoutMs,
  );
/** Waits until the timeline shows these events (Postgres records an outcome a moment before Temporal closes the workflow). */
const withEvents = (jobId: string, events: string[]) =>
  waitFor(`timeline of ${jobId} to show ${events.join(', ')}`, async () => {
    const t = await timeline(jobId);
    const seen = new Set(t.events.map((e: any) => e.event));
    return events.every((e) => seen.has(e)) ? t : undefined;
  });
const purchase = () => ({ amountCents: 900, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'buyer@example.com' });
const fromEvents = (t: any, source: string) => t.events.filter((e: any) => e.source === source);

describe('GET /v1/admin/jobs/{jobId}/timeline', () => {
  it('no worker: stuck at claim, naming the task queue nobody polls; a duplicate submission is counted with its time', async () => {
    const key = `key-${uid()}`;
    const r = await h.submit('summarize', { text: 'nobody polls' }, { key });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId;
    expect((await h.submit('summarize', { text: 'nobody polls' }, { key })).status).toBe(200);

    const t = await verdictMatching(jobId, /^stuck at claim: no worker has polled task queue /);
    expect(t.verdict).toMatchObject({ stage: 'claim', condition: 'stuck' });
    expect(t.stage).toBe(t.verdict.words);
    expect(t.events[0]).toMatchObject({
      at: expect.stringMatching(/Z$/),
      source: 'postgres',
      kind: 'job_intents',
      event: 'intent accepted',
    });
    expect(t.verdict.words).toContain(`task queue ${h.taskQueue} for job type summarize`);
    expect(t.duplicates.count).toBe(1);
    expect(Date.parse(t.duplicates.at[0])).toBeGreaterThanOrEqual(Date.parse(t.events[0].at));
    expect(t.events.map((e: any) => e.event)).toEqual(
      expect.arrayContaining(['intent accepted', 'duplicate submission #1', 'workflow started']),
    );
    expect(fromEvents(t, 'temporal').map((e: any) => e.event)).toContain('workflow task scheduled');
    // The tenant's reduced form: the stage and the next step, no task-queue names.
    const s = (await h.api(`/v1/jobs/${jobId}`)).body;
    expect(s.stage).toMatch(/^waiting at claim: queued for /);
    expect(s.nextStep).toBe('a worker picks up the first attempt');
    // What Postgres cannot see, Temporal's pollers can: named for the tenant by job type, never the queue.
    expect(s.engine).toEqual({
      kind: 'no-poller',
      message: 'no worker is running for job type summarize: the job waits in the queue and starts when one polls',
    });
    expect(JSON.stringify(s)).not.toContain(h.taskQueue);

    // A worker comes: the job runs, and the timeline says completed.
    await h.startWorker('timeline-worker-1');
    expect((await h.waitForStatus(jobId, 'succeeded')).engine).toBeUndefined();
    const done = await withEvents(jobId, ['result written (fenced)', 'activity completed: summarizeText', 'workflow completed']);
    expect(done.verdict.words).toMatch(/^completed /);
    expect(done.verdict.stage).toBe('completion');
    expect(done.timings.claim.queueMs).toBeGreaterThan(0);
    expect(done.timings.sideEffects.executionMs).toBeGreaterThan(0);
    const times = done.events.map((e: any) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(JSON.stringify(done)).not.toContain('nobody polls'); // never the input
  });

  it('held upstream: side effect in doubt, sent at a time, no answer', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 10_000 });
    const jobId = (await h.submit('summarize', { text: 'held upstream' })).body.jobId;
    const t = await verdictMatching(jobId, /^side effect in doubt: summarize sent \d\d:\d\d:\d\dZ, no answer/);
    expect(t.verdict).toMatchObject({ stage: 'side_effects', condition: 'in_doubt' });
    expect(t.events.map((e: any) => e.event)).toContain(`effect ${jobId}:summarize in doubt`);
    expect((await h.api(`/v1/jobs/${jobId}`)).body.stage).toMatch(/^side effect in doubt: summarize sent /);
    await h.waitForStatus(jobId, 'succeeded');
    const done = await timeline(jobId);
    expect(done.events.map((e: any) => e.event)).toContain(`effect ${jobId}:summarize executed`);
  });

  it('400: failed at side effects, refused and not retried; dead letter open', async () => {
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const jobId = (await h.submit('purchase', purchase())).body.jobId;
    const job = await h.waitForStatus(jobId, 'dead_lettered');
    const t = await withEvents(jobId, ['workflow failed']);
    expect(t.verdict.words).toBe(
      `failed at side effects: sendReceipt refused with HTTP 400 (invalid_request), not retried; dead letter ${job.deadLetterId} open`,
    );
    expect(t.verdict.nextStep).toMatch(/replays the dead letter/);
    const events = t.events.map((e: any) => e.event);
    expect(events).toEqual(
      expect.arrayContaining([
        `effect ${jobId}:charge executed`,
        `effect ${jobId}:receipt refused`,
        'attempt 1 of receipt: non-retryable',
        `dead letter ${job.deadLetterId} recorded`,
        'activity failed: sendReceipt',
        'workflow failed',
      ]),
    );
    const charge = t.events.find((e: any) => e.event === `effect ${jobId}:charge executed`);
    expect(charge.detail).toMatch(/provider ID ch_/);
    expect(job.stage).toBe(t.verdict.words);
  });

  it('failed notification: completed; notification failed 3 times (outbox), with each delay and why', async () => {
    await h.simFault({ path: '/v1/notifications', times: 1, status: 503, retryAfter: '1' });
    await h.simFault({ path: '/v1/notifications', times: 1, status: 503 });
    await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
    const jobId = (await h.submit('summarize', { text: 'notify me', notifyEmail: 'someone@example.com' })).body.jobId;
    await waitFor('notification failed', async () => (await h.api(`/v1/jobs/${jobId}`)).body.notification === 'failed');
    const t = await verdictMatching(jobId, /notification failed/);
    expect(t.verdict.words).toMatch(/^completed \S+; notification failed 3 times \(outbox\)$/);
    expect(t.verdict.stage).toBe('completion');
    const notify = t.events.filter((e: any) => e.kind === 'job_attempts' && / of notify: /.test(e.event));
    expect(notify.map((e: any) => e.event)).toEqual([
      'attempt 1 of notify: retryable',
      'attempt 2 of notify: retryable',
      'attempt 3 of notify: non-retryable',
    ]);
    expect(notify[0].detail).toMatch(/HTTP 503.*retry in 1 s \(the upstream's Retry-After\)/);
    expect(notify[1].detail).toMatch(/HTTP 503.*\(full jitter\)/);
    expect(t.events.map((e: any) => e.event)).toContain('outbox row email written');
    expect(JSON.stringify(t)).not.toContain('someone@example.com');
    expect(t.timings.completion.executionMs).toBeGreaterThan(0);
  });

  it('deferral: deferred at claim with the reason; resumed, the pause and resume show with the operator', async () => {
    expect(
      (await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: ['low'], reason: 'timeline test' } })).status,
    ).toBe(200);
    try {
      const jobId = (await h.submit('summarize', { text: 'low and deferred' }, { priority: 'low' })).body.jobId;
      await h.waitForStatus(jobId, 'deferred');
      const t = await verdictMatching(jobId, /^deferred at claim for /);
      expect(t.verdict.words).toMatch(
        /: low-priority work is paused by an operator since .*; it resumes at \d+\/min once the pause is lifted$/,
      );
      expect(t.events.map((e: any) => e.event)).toEqual(expect.arrayContaining(['low priority paused by alice', 'deferred']));
      // The gate is a local activity: its marker reaches the history when the workflow task that
      // ran it completes, a moment after its `deferred` row (which the verdict reads) committed.
      const gate = (await withEvents(jobId, ['activity completed: checkAdmission'])).events.find(
        (e: any) => e.event === 'activity completed: checkAdmission',
      );
      expect(gate.detail).toMatch(/^defer: low-priority work is paused by an operator/);
      expect((await h.api(`/v1/jobs/${jobId}`)).body.nextStep).toBe('admitted once its priority is resumed, at the recovery rate');
      expect((await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } })).status).toBe(200);
      await h.waitForStatus(jobId, 'succeeded');
      const done = await verdictMatching(jobId, /^completed /);
      expect(done.events.map((e: any) => e.event)).toEqual(
        expect.arrayContaining(['low priority resumed by alice', 'admitted after deferral']),
      );
      expect(done.timings.claim.deferredMs).toBeGreaterThan(0);
    } finally {
      await admin('/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [] } });
    }
  });

  it('replay: the original points to its replay job and back; the tenant sees the replay job ID', async () => {
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const jobId = (await h.submit('purchase', purchase())).body.jobId;
    const { deadLetterId } = await h.waitForStatus(jobId, 'dead_lettered');
    const r = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId] } });
    expect(r.status).toBe(202);
    const replayJobId = `${jobId}-replay-1`;
    await h.waitForStatus(replayJobId, 'succeeded');
    const t = await verdictMatching(jobId, /; replayed as /);
    expect(t.verdict.words).toBe(
      `failed at side effects: sendReceipt refused with HTTP 400 (invalid_request), not retried; replayed as ${replayJobId} (succeeded)`,
    );
    expect(t.lineage.replays).toEqual([expect.objectContaining({ jobId: replayJobId, status: 'succeeded' })]);
    expect(t.events.map((e: any) => e.event)).toEqual(
      expect.arrayContaining(['replay requested by alice', 'replay started by alice', `replay job ${replayJobId} accepted`]),
    );
    expect((await h.api(`/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'dead_lettered', replayJobId });
    const back = await timeline(replayJobId);
    expect(back.lineage.replayOf).toBe(jobId);
    expect(back.verdict.stage).toBe('completion');
    // The replay reused the charge (an effect of the original's scope) and executed the receipt.
    expect(back.events.map((e: any) => e.event)).toEqual(
      expect.arrayContaining(['attempt 1 of charge: reused', `effect ${jobId}:receipt executed`]),
    );
  });

  it('answers 401 without the admin key, 404 for an unknown job, 400 for a bad query', async () => {
    expect((await h.api('/v1/admin/jobs/x/timeline')).status).toBe(401);
    const nf = await admin('/v1/admin/jobs/no-such-job/timeline');
    expect(nf.status).toBe(404);
    expect(nf.body.type).toBe('urn:durable-jobs:problem:not-found');
    const bad = await admin('/v1/admin/jobs/no-such-job/timeline?verbose=1');
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: any) => e.path)).toContain('verbose');
  });
});
