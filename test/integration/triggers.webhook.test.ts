import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { jobIdFor } from '../../lib/ids.js';
import { buildApp } from '../../server/app.js';
import { packAndShipJobType } from '../fixtures/jobs/pack-and-ship/activities.js';
import { ADMIN_KEY, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

// The worker, the intake and the receiver know only this registry: one team's webhook-triggered
// type, whose source, events and route are declared in its own definition and nowhere else.
const registry = createJobRegistry([packAndShipJobType]);
const TYPE = 'pack-and-ship';
const SHOP_SECRET = `whsec_${Buffer.from('triggers-shop-webhook-secret-0123').toString('base64')}`;

let h: Harness;
const apps: FastifyInstance[] = [];
/** An API on the harness's database, Temporal and intake with these webhook sources (`source[@tenant]` → secrets). */
async function apiWith(webhookSecrets: Record<string, string[]>): Promise<string> {
  const app = buildApp({
    jobTypes: registry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminApiKey: ADMIN_KEY,
    version: 'test',
    webhookSecrets,
  });
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}
let boundToA: string;
let unbound: string;
beforeAll(async () => {
  h = await startHarness('triggers-webhook', { jobTypes: registry });
  boundToA = await apiWith({ [`shop@${TENANTS.a.id}`]: [SHOP_SECRET] });
  unbound = await apiWith({ shop: [SHOP_SECRET] });
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await h?.close();
});

async function post(baseUrl: string, type: string, data: Record<string, unknown>, id = `msg_${uid()}`) {
  const body = JSON.stringify({ type, data });
  const at = new Date();
  const res = await fetch(`${baseUrl}/v1/webhooks/shop`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(SHOP_SECRET).sign(id, at, body),
    },
    body,
  });
  const text = await res.text();
  return { id, status: res.status, body: text ? JSON.parse(text) : undefined };
}
const row = async (id: string) =>
  (
    await h.pool.query<{ outcome: string; job_id: string | null; source_tenant_id: string | null; refusal: string | null }>(
      `SELECT outcome, job_id, source_tenant_id, refusal FROM webhook_deliveries WHERE source = 'shop' AND webhook_id = $1`,
      [id],
    )
  ).rows[0];
const jobsOfType = async () =>
  (await h.pool.query<{ job_id: string; tenant_id: string }>('SELECT job_id, tenant_id FROM job_intents WHERE job_type = $1', [TYPE])).rows;
const orderJobId = (tenantId: string, orderId: string) => jobIdFor(tenantId, TYPE, `shop-order-${orderId}`);

describe('defineJob({ webhook }): a user-defined webhook-triggered type', () => {
  it("starts one job per order in the source's tenant, and signals it on the next event", async () => {
    const orderId = `o-${uid()}`;
    const jobId = orderJobId(TENANTS.a.id, orderId);
    const paid = await post(boundToA, 'order.paid', { orderId, amountCents: 1250 });
    expect(paid.status).toBe(202);
    expect(paid.body).toEqual({ webhookId: paid.id, outcome: 'started', duplicate: false, jobId });
    // The provider's retry is a duplicate; another delivery for the same order finds the same job (its key).
    expect((await post(boundToA, 'order.paid', { orderId, amountCents: 1250 }, paid.id)).body).toMatchObject({
      duplicate: true,
      outcome: 'started',
    });
    expect((await post(boundToA, 'order.paid', { orderId, amountCents: 1250 })).body).toMatchObject({ outcome: 'started', jobId });
    expect((await jobsOfType()).filter((j) => j.job_id === jobId)).toEqual([{ job_id: jobId, tenant_id: TENANTS.a.id }]);
    await h.waitForStatus(jobId, ['queued', 'running'], 'a');

    const packed = await post(boundToA, 'order.packed', { orderId, slip: 'SLIP-9' });
    expect(packed.status).toBe(202);
    expect(packed.body).toMatchObject({ outcome: 'signalled', duplicate: false });
    const done = await h.waitForStatus(jobId, 'succeeded', 'a');
    expect(done.result).toMatchObject({ orderId, slip: 'SLIP-9' });
    expect((await h.simEffects()).byKey[`${jobId}:ship`]).toMatchObject({ applied: 1 });
    expect(await row(packed.id)).toMatchObject({ outcome: 'signalled', job_id: jobId, source_tenant_id: TENANTS.a.id });
  });

  it("a source bound to tenant A cannot start or signal tenant B's job: refused, recorded, nothing done", async () => {
    const orderId = `o-${uid()}`;
    const before = (await jobsOfType()).length;
    const start = await post(boundToA, 'order.paid', { orderId, amountCents: 500, tenant: TENANTS.b.id });
    expect(start.status).toBe(403);
    expect(start.body.type).toBe('urn:durable-jobs:problem:webhook-refused');
    expect(JSON.stringify(start.body)).not.toContain(TENANTS.b.id);
    expect(await row(start.id)).toMatchObject({ outcome: 'refused', job_id: null, source_tenant_id: TENANTS.a.id });
    expect((await jobsOfType()).length).toBe(before);

    // B's own order, started through a source of no one tenant that names B.
    const bJob = orderJobId(TENANTS.b.id, orderId);
    expect((await post(unbound, 'order.paid', { orderId, amountCents: 500, tenant: TENANTS.b.id })).body).toMatchObject({
      outcome: 'started',
      jobId: bJob,
    });
    await h.waitForStatus(bJob, ['queued', 'running'], 'b');
    // A's source names B's order: the key is looked up in A's tenant, never B's; naming B is refused.
    const named = await post(boundToA, 'order.packed', { orderId, slip: 'FORGED', tenant: TENANTS.b.id });
    expect(named.status).toBe(403);
    expect(await row(named.id)).toMatchObject({ outcome: 'refused', source_tenant_id: TENANTS.a.id });
    const mine = await post(boundToA, 'order.packed', { orderId, slip: 'FORGED' });
    expect(mine.body).toMatchObject({ outcome: 'unmatched' });
    const history = await h.temporal.workflow.getHandle(bJob).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(0);
    expect(['queued', 'running']).toContain((await h.api(`/v1/jobs/${bJob}`, { tenant: 'b' })).body.status);

    // The genuine event through the unbound source completes it.
    await post(unbound, 'order.packed', { orderId, slip: 'SLIP-B', tenant: TENANTS.b.id });
    expect((await h.waitForStatus(bJob, 'succeeded', 'b')).result).toMatchObject({ slip: 'SLIP-B' });
  });

  it('a source of no tenant must name one to start a job; an event the route cannot use is 400 with nothing recorded', async () => {
    const orderId = `o-${uid()}`;
    const none = await post(unbound, 'order.paid', { orderId, amountCents: 100 });
    expect(none.status).toBe(403);
    expect(await row(none.id)).toMatchObject({ outcome: 'refused', refusal: expect.stringContaining('bound to no tenant') });
    for (const data of [{ amountCents: 1 }, { orderId, amountCents: -5 }, { orderId: 'Bad Id!', amountCents: 1 }]) {
      const r = await post(boundToA, 'order.paid', data);
      expect(r.status, JSON.stringify(data)).toBe(400);
      expect(r.body.type).toBe('urn:durable-jobs:problem:malformed-webhook');
      expect(await row(r.id)).toBeUndefined();
    }
    // Another event type of the source: no type routes it.
    const other = await post(boundToA, 'order.refunded', { orderId });
    expect(other.body).toMatchObject({ outcome: 'ignored' });
  });
});
