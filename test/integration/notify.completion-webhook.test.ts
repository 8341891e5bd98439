import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { notifyDoneJobType } from '../fixtures/jobs/notify-done/activities.js';
import { operatorKey, startHarness, TENANTS, waitFor, type Harness } from '../support/harness.js';

// The receiver is on loopback: production refuses that unless the deployment allows it.
process.env.COMPLETION_WEBHOOK_ALLOW_PRIVATE = 'true';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/** A tenant's receiver: answers from `plan` (then 200), records every request. */
function receiver(): Promise<{ url: string; got: Received[]; plan: number[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const plan: number[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const answered = plan.shift() ?? 200;
      got.push({ headers: req.headers, body, answered });
      res.writeHead(answered).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/jobs`,
        got,
        plan,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

let h: Harness;
let rx: Awaited<ReturnType<typeof receiver>>;
let secret: string;
beforeAll(async () => {
  h = await startHarness('notify-webhook', { jobTypes: createJobRegistry([...builtInJobTypes, notifyDoneJobType]) });
  rx = await receiver();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } });
const hookPath = `/v1/admin/tenants/${TENANTS.a.id}/completion-webhook`;
const outboxOf = async (jobId: string) =>
  (await h.pool.query('SELECT kind, state, error_class, status_code FROM outbox WHERE job_id = $1 ORDER BY kind', [jobId])).rows;
const deliveriesOf = (jobId: string) => rx.got.filter((r) => r.body.includes(jobId));

describe('the completion webhook', () => {
  it('is set by an admin: the secret is shown once, stored sealed, and bad input is refused precisely', async () => {
    const bad = await admin(hookPath, { method: 'PUT', body: { url: 'ftp://example.com/x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'url', message: 'url must use http or https' }]);
    expect((await admin(hookPath, { method: 'PUT', body: {} })).body.errors[0].path).toBe('url');
    expect((await admin('/v1/admin/tenants/nobody/completion-webhook', { method: 'PUT', body: { url: rx.url } })).status).toBe(404);
    expect((await h.api(hookPath, { method: 'PUT', body: { url: rx.url } })).status).toBe(401);

    const set = await admin(hookPath, { method: 'PUT', body: { url: rx.url } });
    expect(set.status).toBe(200);
    expect(set.headers.get('cache-control')).toBe('no-store');
    expect(set.body).toMatchObject({ tenantId: TENANTS.a.id, url: rx.url, secret: expect.stringMatching(/^whsec_/) });
    secret = set.body.secret;
    const read = await admin(hookPath);
    expect(read.body).toMatchObject({ url: rx.url, secretPrefix: secret.slice(0, 10) });
    expect(JSON.stringify(read.body)).not.toContain(secret.slice(6));
    const stored = (await h.pool.query('SELECT * FROM tenant_completion_webhooks')).rows[0];
    expect(Buffer.from(stored.secret_sealed).toString('latin1')).not.toContain(secret.slice(6, 20));
  });

  it('delivers a signed job.succeeded once after 500s, with the same webhook-id on every try; the job stays succeeded', async () => {
    rx.plan.push(500, 500, 500);
    const r = await h.submit('notify-done', { orderId: 'o-1', email: 'buyer@example.com' });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId as string;
    await waitFor('the job to succeed', async () => (await h.api(`/v1/jobs/${jobId}`)).body.status === 'succeeded');
    // While the receiver fails and after, the job is succeeded.
    const seen = new Set<string>();
    await waitFor('the webhook to be delivered', async () => {
      const job = (await h.api(`/v1/jobs/${jobId}`)).body;
      seen.add(job.status);
      return deliveriesOf(jobId).some((d) => d.answered === 200) && job.notification === 'sent';
    });
    expect([...seen]).toEqual(['succeeded']);
    const tries = deliveriesOf(jobId);
    expect(tries.map((d) => d.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(tries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    expect(tries[0]!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(tries[0]!.headers['webhook-id']).not.toContain(jobId);
    // Each try verifies with the tenant's secret (Standard Webhooks), and says what happened.
    const wh = new Webhook(secret);
    for (const t of tries) wh.verify(t.body, t.headers as Record<string, string>);
    expect(wh.verify(tries[3]!.body, tries[3]!.headers as Record<string, string>)).toEqual({
      type: 'job.succeeded',
      timestamp: expect.stringMatching(/Z$/),
      data: { jobId, type: 'notify-done', tenantId: TENANTS.a.id, status: 'succeeded', result: { orderId: 'o-1', done: true } },
    });
    // A tampered body does not verify.
    expect(() => wh.verify(tries[3]!.body.replace('o-1', 'o-2'), tries[3]!.headers as Record<string, string>)).toThrow();
    // Both declared targets were written with the result and delivered: the e-mail went to the simulator.
    expect(await outboxOf(jobId)).toEqual([
      { kind: 'completion-webhook', state: 'delivered', error_class: null, status_code: null },
      { kind: 'email', state: 'delivered', error_class: null, status_code: null },
    ]);
    expect((await h.simEffects()).byKey[`${jobId}:notify-email`]).toMatchObject({ applied: 1 });
    const attempts = await h.pool.query(`SELECT outcome, status_code FROM job_attempts WHERE job_id = $1 AND step = 'notify' ORDER BY id`, [
      jobId,
    ]);
    expect(attempts.rows.map((a) => a.status_code)).toEqual([500, 500, 500]);
  });

  it('a 400 ends a failed notification with evidence; the job stays succeeded', async () => {
    rx.plan.push(400);
    const r = await h.submit('notify-done', { orderId: 'o-2' });
    const jobId = r.body.jobId as string;
    await h.temporal.workflow.getHandle(jobId).result();
    expect((await h.api(`/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'succeeded', notification: 'failed' });
    expect(await outboxOf(jobId)).toEqual([
      { kind: 'completion-webhook', state: 'failed', error_class: 'invalid_request', status_code: 400 },
    ]);
    expect(deliveriesOf(jobId).map((d) => d.answered)).toEqual([400]);
    const failed = (await admin('/v1/admin/outbox?state=failed')).body.items.find((i: { jobId: string }) => i.jobId === jobId);
    expect(failed).toMatchObject({ kind: 'completion-webhook', errorClass: 'invalid_request', statusCode: 400 });
  });

  it('a tenant without an endpoint gets no row, and a removed endpoint is no longer called', async () => {
    const r = await h.submit('notify-done', { orderId: 'o-3' }, { tenant: 'b' });
    const jobId = r.body.jobId as string;
    await h.temporal.workflow.getHandle(jobId).result();
    expect(await outboxOf(jobId)).toEqual([]);
    expect((await admin(hookPath, { method: 'DELETE' })).status).toBe(204);
    expect((await admin(hookPath)).status).toBe(404);
    expect((await admin(hookPath, { method: 'DELETE' })).status).toBe(404);
    const after = await h.submit('notify-done', { orderId: 'o-4' });
    await h.temporal.workflow.getHandle(after.body.jobId).result();
    expect(await outboxOf(after.body.jobId)).toEqual([]);
    expect(deliveriesOf(after.body.jobId)).toEqual([]);
  });
});
