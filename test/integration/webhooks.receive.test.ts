import { createHmac } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { ADMIN_KEY, startHarness, uid, waitFor, WEBHOOK_SECRET, type Harness } from '../support/harness.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let h: Harness;
const extraApps: FastifyInstance[] = [];
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  h = await startHarness('webhooks');
});
afterAll(async () => {
  for (const app of extraApps) await app.close();
  for (const cleanup of cleanups) await cleanup();
  await h?.close();
});

const secret = (label: string) => `whsec_${Buffer.from(`integration-${label}-webhook-secret-0123`).toString('base64')}`;

interface Post {
  secret?: string;
  id?: string;
  at?: Date;
  body?: string;
  signedBody?: string;
  headers?: Record<string, string>;
  omit?: string[];
  signature?: string;
}

/** Posts a Standard Webhooks request the way a provider does; every field can be broken on purpose. */
async function postWebhook(baseUrl: string, o: Post = {}, source = 'sim') {
  const id = o.id ?? `msg_${uid()}`;
  const at = o.at ?? new Date();
  const body = o.body ?? JSON.stringify({ type: 'test.ping', data: { n: 1 } });
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': o.signature ?? new Webhook(o.secret ?? WEBHOOK_SECRET).sign(id, at, o.signedBody ?? body),
    ...o.headers,
  };
  for (const name of o.omit ?? []) delete headers[name];
  const res = await fetch(`${baseUrl}/v1/webhooks/${source}`, { method: 'POST', headers, body });
  const text = await res.text();
  return { id, status: res.status, body: text ? JSON.parse(text) : undefined };
}

const delivery = (id: string, source = 'sim') =>
  h.api(`/v1/admin/webhook-deliveries/${source}/${encodeURIComponent(id)}`, {
    tenant: null,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
const rowsFor = async (id: string) =>
  Number((await h.pool.query('SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1', [id])).rows[0].n);

/** A transcribe job whose simulator webhook is dropped: the test delivers the completion itself. */
async function transcribeWaitingForWebhook() {
  await h.simFault({ path: '/v1/transcriptions', dropWebhooks: 1 });
  const r = await h.submit('transcribe', { audioUrl: `https://example.com/audio-${uid()}.wav` });
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
  return { jobId: r.body.jobId as string, transcriptionId, completion };
}

async function signalsReceived(jobId: string): Promise<number> {
  const history = await h.temporal.workflow.getHandle(jobId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
}

/** A second API on the same database (and by default the same Temporal), with its own secrets and logger. */
async function extraApp(webhookSecrets: Record<string, string[]>, log = h.log, temporal = h.temporal) {
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal,
    jobs: h.jobs,
    log,
    adminApiKey: ADMIN_KEY,
    version: 'test',
    webhookSecrets,
  });
  extraApps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

describe('POST /v1/webhooks/{source}', () => {
  it('records a valid delivery once; the same webhook-id again answers 2xx and only counts', async () => {
    const first = await postWebhook(h.baseUrl);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ webhookId: first.id, outcome: 'ignored', duplicate: false });
    const again = await postWebhook(h.baseUrl, { id: first.id });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true });
    expect(await rowsFor(first.id)).toBe(1);
    const d = await delivery(first.id);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ source: 'sim', webhookId: first.id, eventType: 'test.ping', outcome: 'ignored', timesReceived: 2 });
    expect(Date.parse(d.body.firstSeenAt)).toBeLessThanOrEqual(Date.parse(d.body.lastReceivedAt));
    // The signature, not the content type, decides: a provider sending another type still verifies.
    expect((await postWebhook(h.baseUrl, { headers: { 'content-type': 'application/octet-stream' } })).status).toBe(202);
  });

  it('delivers the same webhook-id sent 5 times concurrently to its job exactly once', async () => {
    const job = await transcribeWaitingForWebhook();
    const id = `msg_${uid()}`;
    const body = job.completion('text from the concurrent webhook');
    const answers = await Promise.all(Array.from({ length: 5 }, () => postWebhook(h.baseUrl, { id, body })));
    for (const a of answers) expect([200, 202]).toContain(a.status);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    const done = await h.waitForStatus(job.jobId, 'succeeded');
    expect(done.result).toMatchObject({
      transcriptionId: job.transcriptionId,
      text: 'text from the concurrent webhook',
      completedVia: 'webhook',
      webhookId: id,
    });
    expect(await rowsFor(id)).toBe(1);
    expect((await delivery(id)).body).toMatchObject({ jobId: job.jobId, outcome: 'signalled', timesReceived: 5 });
    expect(await signalsReceived(job.jobId)).toBe(1);
    // A late redelivery after the job finished still answers 2xx and changes nothing.
    const late = await postWebhook(h.baseUrl, { id, body });
    expect(late.status).toBe(200);
    expect(await signalsReceived(job.jobId)).toBe(1);
    expect((await delivery(id)).body).toMatchObject({ outcome: 'signalled', timesReceived: 6 });
  });

  it('answers 202 for an event whose signal failed (durable as pending_signal), and the compensation scan completes the hand-off', async () => {
    const job = await transcribeWaitingForWebhook();
    // An API whose Temporal is unreachable: the delivery commits, the signal cannot.
    const deadConnection = Connection.lazy({ address: '127.0.0.1:1' });
    cleanups.push(() => deadConnection.close());
    const deadTemporal = new Client({ connection: deadConnection, namespace: 'default' });
    const down = await extraApp({ sim: [WEBHOOK_SECRET] }, h.log, deadTemporal);
    const id = `msg_${uid()}`;
    const body = job.completion('text delivered after an outage');
    const first = await postWebhook(down, { id, body });
    // Durable, so the provider is done: 2xx (a 5xx would only make it redeliver what we hold).
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ webhookId: id, outcome: 'pending_signal', duplicate: false });
    expect((await delivery(id)).body).toMatchObject({ jobId: job.jobId, outcome: 'pending_signal', timesReceived: 1 });
    expect(await signalsReceived(job.jobId)).toBe(0);
    // No redelivery comes: the real compensation scan (past its grace period) signals the job.
    const report = (await h.temporal.workflow.execute('compensationScan', {
      taskQueue: h.taskQueue,
      workflowId: `scan-${uid()}`,
      args: [{ schedules: [], now: new Date(Date.now() + 3_600_000).toISOString() }],
    })) as { webhooksResignalled: number; errors: number };
    expect(report).toMatchObject({ webhooksResignalled: 1, errors: 0 });
    expect((await delivery(id)).body).toMatchObject({ outcome: 'signalled', timesReceived: 1 });
    const done = await h.waitForStatus(job.jobId, 'succeeded');
    expect(done.result).toMatchObject({ completedVia: 'webhook', webhookId: id, text: 'text delivered after an outage' });
    expect(await signalsReceived(job.jobId)).toBe(1);
    // A late redelivery of it changes nothing.
    expect((await postWebhook(h.baseUrl, { id, body })).body).toMatchObject({ duplicate: true, outcome: 'signalled' });
    expect(await signalsReceived(job.jobId)).toBe(1);
  });

  it('answers 401 and records nothing for a bad signature, tampered body, stale or future timestamp, missing headers', async () => {
    const cases: Array<[string, Post]> = [
      ['bad signature', { signature: 'v1,bm90IGEgcmVhbCBzaWduYXR1cmUgYXQgYWxs' }],
      ['wrong secret', { secret: secret('attacker') }],
      [
        'tampered body',
        { body: JSON.stringify({ type: 'test.ping', data: { n: 2 } }), signedBody: JSON.stringify({ type: 'test.ping', data: { n: 1 } }) },
      ],
      ['stale timestamp', { at: new Date(Date.now() - 6 * 60_000) }],
      ['future timestamp', { at: new Date(Date.now() + 6 * 60_000) }],
      ['missing webhook-signature', { omit: ['webhook-signature'] }],
      ['missing webhook-timestamp', { omit: ['webhook-timestamp'] }],
      ['missing webhook-id', { omit: ['webhook-id'] }],
      ['bad signature and malformed JSON', { body: '{"type": ', signature: 'v1,AAAA' }],
    ];
    for (const [name, post] of cases) {
      const r = await postWebhook(h.baseUrl, post);
      expect(r.status, name).toBe(401);
      expect(r.body.type, name).toBe('urn:durable-jobs:problem:invalid-webhook-signature');
      expect(await rowsFor(r.id), name).toBe(0);
      expect((await delivery(r.id)).status, name).toBe(404);
    }
  });

  it('answers 401 for a webhook-timestamp that is not strictly an integer, even when the signature covers it (F12)', async () => {
    const now = String(Math.floor(Date.now() / 1000));
    const key = Buffer.from(WEBHOOK_SECRET.slice('whsec_'.length), 'base64');
    for (const ts of [`${now}abc`, `${now}.5`, `0${now}`, `+${now}`, `${now}e0`]) {
      const id = `msg_${uid()}`;
      const body = JSON.stringify({ type: 'test.ping', data: { n: 1 } });
      // Signed over exactly this timestamp text, as a sender that means it would.
      const signature = `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`;
      const r = await postWebhook(h.baseUrl, { id, body, signature, headers: { 'webhook-timestamp': ts } });
      expect(r.status, ts).toBe(401);
      expect(r.body.detail, ts).toContain('webhook-timestamp');
      expect(await rowsFor(id), ts).toBe(0);
    }
  });

  it('refuses a known webhook-id with a different, validly signed body (409) and records the conflict on its row (F12)', async () => {
    const id = `msg_${uid()}`;
    const body = JSON.stringify({ type: 'test.ping', data: { n: 1 } });
    expect((await postWebhook(h.baseUrl, { id, body })).status).toBe(202);
    const other = await postWebhook(h.baseUrl, { id, body: JSON.stringify({ type: 'test.ping', data: { n: 2 } }) });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ type: 'urn:durable-jobs:problem:webhook-id-conflict', status: 409 });
    // The same bytes again are still a plain redelivery.
    expect((await postWebhook(h.baseUrl, { id, body })).status).toBe(200);
    expect(await rowsFor(id)).toBe(1);
    const d = await delivery(id);
    expect(d.body).toMatchObject({ timesReceived: 2, conflictingDeliveries: 1, lastConflictAt: expect.any(String) });
  });

  it('does not let a different body under a known webhook-id reach the job a second time', async () => {
    const job = await transcribeWaitingForWebhook();
    const id = `msg_${uid()}`;
    expect((await postWebhook(h.baseUrl, { id, body: job.completion('the real transcript') })).status).toBe(202);
    const done = await h.waitForStatus(job.jobId, 'succeeded');
    expect(done.result).toMatchObject({ text: 'the real transcript', webhookId: id });
    expect((await postWebhook(h.baseUrl, { id, body: job.completion('FORGED') })).status).toBe(409);
    expect(await signalsReceived(job.jobId)).toBe(1);
    expect((await delivery(id)).body).toMatchObject({ jobId: job.jobId, outcome: 'signalled', timesReceived: 1, conflictingDeliveries: 1 });
  });

  it('answers 400 for malformed JSON under a valid signature, and records nothing', async () => {
    const r = await postWebhook(h.baseUrl, { body: '{"type": "transcription.completed", ' });
    expect(r.status).toBe(400);
    expect(r.body.type).toBe('urn:durable-jobs:problem:malformed-webhook');
    const noId = await postWebhook(h.baseUrl, { body: JSON.stringify({ type: 'transcription.completed', data: {} }) });
    expect(noId.status).toBe(400);
    expect((await rowsFor(r.id)) + (await rowsFor(noId.id))).toBe(0);
  });

  it('answers 400 for a validly signed event nested 5,000 levels deep, and records nothing', async () => {
    const deepData = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
    const body = `{"type":"transcription.completed","data":{"id":"tr_deep","nested":${deepData}}}`;
    const r = await postWebhook(h.baseUrl, { body });
    expect(r.status).toBe(400);
    expect(r.body.type).toBe('urn:durable-jobs:problem:malformed-webhook');
    expect(r.body.detail).toContain('deeper than 64 levels');
    expect(await rowsFor(r.id)).toBe(0);
    // Arrays too; and an event at the limit is fine.
    const arrays = await postWebhook(h.baseUrl, { body: `{"type":"test.ping","data":{"x":${'['.repeat(6_000)}${']'.repeat(6_000)}}}` });
    expect(arrays.status).toBe(400);
    expect(await rowsFor(arrays.id)).toBe(0);
    const atLimit = await postWebhook(h.baseUrl, { body: `{"type":"test.ping","data":{"x":${'['.repeat(62)}${']'.repeat(62)}}}` });
    expect(atLimit.status).toBe(202);
  });

  it('answers 404 for a source without secrets', async () => {
    const r = await postWebhook(h.baseUrl, {}, 'nobody');
    expect(r.status).toBe(404);
    expect(r.body.type).toBe('urn:durable-jobs:problem:unknown-webhook-source');
  });

  it('accepts the old and the new secret during a rotation, and refuses a retired one', async () => {
    const newSecret = secret('new');
    const url = await extraApp({ sim: [newSecret, WEBHOOK_SECRET] });
    expect((await postWebhook(url, { secret: newSecret })).status).toBe(202);
    expect((await postWebhook(url, { secret: WEBHOOK_SECRET })).status).toBe(202);
    // After the rotation ends, only the new secret is configured.
    const after = await extraApp({ sim: [newSecret] });
    expect((await postWebhook(after, { secret: WEBHOOK_SECRET })).status).toBe(401);
  });

  it('keeps the delivery report behind the admin key', async () => {
    const r = await postWebhook(h.baseUrl);
    expect((await h.api(`/v1/admin/webhook-deliveries/sim/${r.id}`, { tenant: 'a' })).status).toBe(401);
    expect((await delivery(r.id)).status).toBe(200);
  });
});

describe('webhook logs', () => {
  it('keep delivery ID, event type, job and outcome, never the signature, secrets, Authorization or cookies', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    // No redaction configured here on purpose: this proves the code never logs these values.
    const url = await extraApp({ sim: [WEBHOOK_SECRET] }, pino({ level: 'debug' }, sink));
    const job = await transcribeWaitingForWebhook();
    const id = `msg_${uid()}`;
    const body = job.completion('text for the logs test');
    const at = new Date();
    const signature = new Webhook(WEBHOOK_SECRET).sign(id, at, body);
    const sensitive = { authorization: 'Bearer tenant-token-must-not-be-logged', cookie: 'session=cookie-must-not-be-logged' };
    const ok = await postWebhook(url, { id, at, body, headers: sensitive });
    expect(ok.status).toBe(202);
    await postWebhook(url, { id, at, body, headers: sensitive });
    const forged = await postWebhook(url, { signature: 'v1,Zm9yZ2VkLXNpZ25hdHVyZS12YWx1ZQ==', headers: sensitive });
    expect(forged.status).toBe(401);
    await h.waitForStatus(job.jobId, 'succeeded');

    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.find((e) => e.webhookId === id && e.duplicate === false)).toMatchObject({
      webhookId: id,
      eventType: 'transcription.completed',
      jobId: job.jobId,
      outcome: 'signalled',
      source: 'sim',
    });
    expect(entries.find((e) => e.webhookId === id && e.duplicate === true)).toMatchObject({ outcome: 'signalled', timesReceived: 2 });
    expect(entries.find((e) => e.webhookId === forged.id)).toMatchObject({ outcome: 'unauthorized' });
    const all = lines.join('\n');
    const secretBytes = WEBHOOK_SECRET.slice('whsec_'.length);
    for (const needle of [
      signature,
      signature.slice(3),
      'Zm9yZ2VkLXNpZ25hdHVyZS12YWx1ZQ==',
      WEBHOOK_SECRET,
      secretBytes,
      'tenant-token-must-not-be-logged',
      'cookie-must-not-be-logged',
      'text for the logs test',
    ]) {
      expect(all.includes(needle), `logs contain ${needle}`).toBe(false);
    }
  });
});
