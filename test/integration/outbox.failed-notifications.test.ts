import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboxFigures } from '../../store/health.js';
import { operatorKey, startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('outbox-failed', { workers: 1 });
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } });

/** A summarize job whose notification the upstream refuses for good (400), run to its end. */
async function jobWithRefusedNotification(email: string): Promise<string> {
  await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
  const r = await h.submit('summarize', { text: 'Done, but the e-mail bounced.', notifyEmail: email });
  await h.temporal.workflow.getHandle(r.body.jobId).result();
  return r.body.jobId as string;
}

describe('a notification that fails permanently', () => {
  it('ends failed with evidence, leaves the pending figures, and an operator replays it', async () => {
    const jobId = await jobWithRefusedNotification('bounce@example.com');
    const job = (await h.api(`/v1/jobs/${jobId}`)).body;
    expect(job).toMatchObject({ status: 'succeeded', notification: 'failed' });
    const row = (await h.pool.query('SELECT id, state FROM outbox WHERE job_id = $1', [jobId])).rows[0];
    expect(row.state).toBe('failed');
    expect((await outboxFigures(h.pool)).pending).toBe(0);

    const list = await admin('/v1/admin/outbox?state=failed');
    expect(list.status).toBe(200);
    const item = list.body.items.find((i: { jobId: string }) => i.jobId === jobId);
    expect(item).toMatchObject({
      id: row.id,
      kind: 'email',
      state: 'failed',
      errorClass: 'invalid_request',
      statusCode: 400,
      attempts: 1,
      tenantId: 'tenant-a',
      replays: 0,
    });
    expect(item.failedAt).toMatch(/Z$/);
    expect(JSON.stringify(list.body)).not.toContain('bounce@example.com');

    // The cause is fixed upstream; the operator replays it: same effect key, delivered once.
    const replay = await admin(`/v1/admin/outbox/${row.id}/replay`, { method: 'POST', body: { reason: 'mailbox fixed' } });
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ state: 'pending', replays: 1, resolvedBy: 'dana', reason: 'mailbox fixed' });
    await h.temporal.workflow.getHandle(replay.body.workflowId).result();
    await waitFor('the notification to be sent', async () => (await h.api(`/v1/jobs/${jobId}`)).body.notification === 'sent');
    expect((await admin(`/v1/admin/outbox/${row.id}`)).body.state).toBe('delivered');
    expect((await h.simEffects()).byKey[`${jobId}:notify-email`]).toMatchObject({ applied: 1 });
    // Not failed any more: a second replay is refused.
    const again = await admin(`/v1/admin/outbox/${row.id}/replay`, { method: 'POST', body: {} });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('urn:durable-jobs:problem:outbox-not-failed');
  });

  it('can be discarded instead, with a reason, and is never delivered afterwards', async () => {
    const jobId = await jobWithRefusedNotification('gone@example.com');
    const id = (await h.pool.query('SELECT id FROM outbox WHERE job_id = $1', [jobId])).rows[0].id as string;
    const noReason = await admin(`/v1/admin/outbox/${id}/discard`, { method: 'POST', body: {} });
    expect(noReason.status).toBe(400);
    expect(noReason.headers.get('content-type')).toContain('application/problem+json');
    expect(noReason.body.errors).toEqual([{ path: 'reason', message: expect.stringContaining('reason is required') }]);
    const discarded = await admin(`/v1/admin/outbox/${id}/discard`, { method: 'POST', body: { reason: 'customer left' } });
    expect(discarded.status).toBe(200);
    expect(discarded.body).toMatchObject({ state: 'discarded', resolvedBy: 'dana', reason: 'customer left' });
    expect((await admin(`/v1/admin/outbox/${id}/replay`, { method: 'POST', body: {} })).status).toBe(409);
    expect((await h.simEffects()).byKey[`${jobId}:notify-email`]?.applied ?? 0).toBe(0);
  });

  it('answers bad requests with precise problems', async () => {
    const bad = await admin('/v1/admin/outbox?state=lost');
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toEqual({ path: 'state', message: 'state must be one of: pending, delivered, failed, discarded' });
    expect((await admin('/v1/admin/outbox/999999999')).status).toBe(404);
    expect((await admin('/v1/admin/outbox/not-a-number')).status).toBe(404);
    expect((await h.api('/v1/admin/outbox', { tenant: 'a' })).status).toBe(401);
  });
});
