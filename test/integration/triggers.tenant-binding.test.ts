import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimEarlyWebhooks } from '../../activities/job-facts.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { DEFAULT_WEBHOOK_WAIT_MS } from '../../jobs/transcribe/workflow.js';
import { buildApp } from '../../server/app.js';
import { recordDelivery } from '../../store/webhook-deliveries.js';
import { ADMIN_KEY, startHarness, TENANTS, uid, waitFor, WEBHOOK_SECRET, type Harness } from '../support/harness.js';

// F3 (security review 2026-12-06): a source bound to a tenant speaks only for that tenant's jobs.
// The harness's own API has source `sim` bound to no tenant (the single-tenant dev setup); this
// second API on the same database binds the same source to tenant A.
let h: Harness;
let app: FastifyInstance;
let boundToA: string;
beforeAll(async () => {
  h = await startHarness('triggers-binding');
  app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: h.log,
    adminApiKey: ADMIN_KEY,
    version: 'test',
    webhookSecrets: { [`sim@${TENANTS.a.id}`]: [WEBHOOK_SECRET] },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  boundToA = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await app?.close();
  await h?.close();
});

async function post(baseUrl: string, body: string, id = `msg_${uid()}`) {
  const at = new Date();
  const res = await fetch(`${baseUrl}/v1/webhooks/sim`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(WEBHOOK_SECRET).sign(id, at, body),
    },
    body,
  });
  const text = await res.text();
  return { id, status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A transcription of `tenant` whose simulator webhook is dropped: the test delivers the completion itself. */
async function transcriptionWaitingForWebhook(tenant: keyof typeof TENANTS) {
  await h.simFault({ path: '/v1/transcriptions', dropWebhooks: 1 });
  const audioUrl = `https://example.com/audio-${uid()}.wav`;
  const r = await h.submit('transcribe', { audioUrl }, { tenant });
  expect(r.status).toBe(202);
  const transcriptionId = await waitFor(
    'the provider ID to be stored',
    async () =>
      (
        await h.pool.query<{ provider_id: string | null }>(`SELECT provider_id FROM effects WHERE job_id = $1 AND step = 'transcribe'`, [
          r.body.jobId,
        ])
      ).rows[0]?.provider_id ?? undefined,
  );
  const completion = (text: string) =>
    JSON.stringify({ type: 'transcription.completed', data: { id: transcriptionId, status: 'completed', text } });
  return { jobId: r.body.jobId as string, audioUrl, transcriptionId, completion };
}

const signalsOf = async (jobId: string) =>
  ((await h.temporal.workflow.getHandle(jobId).fetchHistory()).events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes)
    .length;
const deliveryRow = async (id: string) =>
  (
    await h.pool.query(
      `SELECT outcome, job_id, source_tenant_id, refusal FROM webhook_deliveries WHERE source = 'sim' AND webhook_id = $1`,
      [id],
    )
  ).rows[0];

describe('a webhook source bound to a tenant (F3)', () => {
  it("cannot complete another tenant's transcription: refused, recorded, the job untouched", async () => {
    const b = await transcriptionWaitingForWebhook('b');
    const forged = await post(boundToA, b.completion('FORGED transcript sent through the source of tenant A'));
    expect(forged.status).toBe(403);
    expect(forged.body.type).toBe('urn:durable-jobs:problem:webhook-refused');
    // The sender learns nothing about the job it addressed.
    expect(JSON.stringify(forged.body)).not.toContain(b.jobId);
    expect(JSON.stringify(forged.body)).not.toContain(TENANTS.b.id);
    expect(await deliveryRow(forged.id)).toEqual({
      outcome: 'refused',
      job_id: b.jobId,
      source_tenant_id: TENANTS.a.id,
      refusal: expect.stringContaining('another tenant'),
    });
    // A redelivery is refused again, never signalled.
    expect((await post(boundToA, b.completion('FORGED transcript sent through the source of tenant A'), forged.id)).status).toBe(403);
    expect(await signalsOf(b.jobId)).toBe(0);

    // Untouched: with no genuine webhook, B's job completes by polling with the provider's own text.
    const done = await h.waitForStatus(b.jobId, 'succeeded', 'b', DEFAULT_WEBHOOK_WAIT_MS + 90_000);
    expect(done.result).toMatchObject({ text: `transcript of ${b.audioUrl}`, completedVia: 'polling', webhookId: null });
    expect(await signalsOf(b.jobId)).toBe(0);
  });

  it("still completes its own tenant's transcription", async () => {
    const a = await transcriptionWaitingForWebhook('a');
    const ok = await post(boundToA, a.completion('the real transcript'));
    expect(ok.status).toBe(202);
    expect(ok.body).toMatchObject({ outcome: 'signalled' });
    const done = await h.waitForStatus(a.jobId, 'succeeded', 'a');
    expect(done.result).toMatchObject({ text: 'the real transcript', completedVia: 'webhook', webhookId: ok.id });
    expect(await deliveryRow(ok.id)).toMatchObject({ outcome: 'signalled', job_id: a.jobId, source_tenant_id: TENANTS.a.id });
  });

  it('an early event from a source bound to another tenant is refused when the job claims it', async () => {
    const subject = `tr_early_${uid()}`;
    const early = (id: string, sourceTenantId: string | null) =>
      recordDelivery(h.pool, {
        source: 'sim',
        webhookId: id,
        eventType: 'transcription.completed',
        subject,
        payload: { id: subject, status: 'completed', text: `from ${id}` },
        jobId: null,
        outcome: 'unmatched',
        sourceTenantId,
        signalName: 'transcriptionCompleted',
        signalArg: { webhookId: id, transcriptionId: subject, status: 'completed', text: `from ${id}` },
      });
    await early('msg-from-a', TENANTS.a.id);
    await early('msg-from-b', TENANTS.b.id);
    await early('msg-from-anyone', null);
    // A job of tenant B learns that it owns `subject`.
    const b = await h.submit('summarize', { text: 'a job of tenant b' }, { tenant: 'b' });
    expect(b.status).toBe(202);
    const claimed = await claimEarlyWebhooks({ pool: h.pool }, 'transcription.completed', subject, b.body.jobId);
    expect(claimed.map((c) => c.webhookId).sort()).toEqual(['msg-from-anyone', 'msg-from-b']);
    expect(await deliveryRow('msg-from-a')).toMatchObject({ outcome: 'refused', job_id: b.body.jobId, source_tenant_id: TENANTS.a.id });
  });
});
