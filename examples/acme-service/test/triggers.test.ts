// Triggers declared in the job definitions, through the service's own API process: the
// `daily-report` Schedule exists because the API read it from the registry, and a signed
// `order.paid` webhook from the shop starts one `order-receipt` job, however often it is redelivered.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestStack, type TestStack } from 'durable-jobs/testing';
import jobs from '../src/jobs.js';
import { startApiProcess, type ApiProcess } from './api-process.js';
import { startMailpit, type Mailpit } from './third-party.js';
import { waitFor } from './wait.js';

const SHOP_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let stack: TestStack;
let mailpit: Mailpit;
let api: ApiProcess;
beforeAll(async () => {
  mailpit = await startMailpit();
  process.env.SMTP_URL = mailpit.smtpUrl;
  process.env.MAIL_SEARCH_URL = mailpit.url;
  stack = await startTestStack({ jobs });
  await stack.startWorker();
  api = await startApiProcess(stack, {
    ADMIN_API_KEY: 'acme-test-admin-key-0123456789abcdef',
    // The shop's source belongs to the test tenant: its events start only that tenant's jobs.
    WEBHOOK_SECRETS: `shop@${stack.tenantId}=${SHOP_SECRET}`,
  });
});
afterAll(async () => {
  await api?.close();
  await stack?.close();
  await mailpit?.close();
});

const mailTo = async (address: string) => (await mailpit.messages()).filter((m) => m.To.some((t) => t.Address === address));

it('the schedule in daily-report is created by the API; a firing e-mails the tenant its report once', async () => {
  const schedule = stack.temporal.schedule.getHandle(`${stack.taskQueue}.daily-report`);
  expect((await schedule.describe()).action.workflowType).toBe('scheduleTrigger');
  await schedule.trigger(); // "trigger now": one firing, a window of today's grid
  const job = await waitFor('the report job of the window', async () => {
    const page = await stack.client.listJobs(stack.tenantId, { type: 'daily-report' });
    return page.jobs[0];
  });
  const done = await stack.waitForJob(job.jobId, 'succeeded');
  expect(done.result).toMatchObject({ windowStart: expect.stringMatching(/T06:00:00/) });
  expect(await mailTo(`reports+${stack.tenantId}@acme.test`)).toHaveLength(1);
});

async function postShopEvent(id: string, type: string, data: Record<string, unknown>) {
  const body = JSON.stringify({ type, data });
  const at = new Date();
  const res = await fetch(`${api.url}/v1/webhooks/shop`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(SHOP_SECRET).sign(id, at, body),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

it("a signed order.paid from the shop starts the order's receipt job once, redelivered or not", async () => {
  const data = { orderId: 'o-7', email: 'pat@acme.test', amountCents: 1999 };
  const first = await postShopEvent('msg_order_o7_paid', 'order.paid', data);
  expect(first).toMatchObject({ status: 202, body: { outcome: 'started', jobId: expect.any(String) } });
  const again = await postShopEvent('msg_order_o7_paid', 'order.paid', data);
  expect(again).toMatchObject({ status: 200, body: { duplicate: true } });
  const done = await stack.waitForJob(first.body.jobId as string, 'succeeded');
  expect(done.type).toBe('order-receipt');
  expect(await mailTo('pat@acme.test')).toHaveLength(1);
  // An unsigned event starts nothing.
  const forged = await fetch(`${api.url}/v1/webhooks/shop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) },
    body: JSON.stringify({ type: 'order.paid', data: { ...data, orderId: 'o-8' } }),
  });
  expect(forged.status).toBe(401);
});
