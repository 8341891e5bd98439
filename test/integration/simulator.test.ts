import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/server.js';

// Self-contained: starts its own simulator and webhook receiver, needs no Temporal or Postgres.

const secret = `whsec_${randomBytes(24).toString('base64')}`;

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
}

/** A webhook endpoint that records every delivery and can be told to fail the next N. */
class Receiver {
  readonly received: Received[] = [];
  failNext = 0;
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.received.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') });
      const failing = this.failNext > 0;
      if (failing) this.failNext -= 1;
      res.writeHead(failing ? 500 : 204).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  forTranscription(id: string): Received[] {
    return this.received.filter((r) => (JSON.parse(r.raw) as { data: { id: string } }).data.id === id);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Effects {
  totalApplied: number;
  byKey: Record<string, { applied: number; requests: number; path: string; requestTimes: string[] }>;
  peakInFlight: number;
  peakInFlightByTenant: Record<string, number>;
  inFlight: number;
  inFlightByTenant: Record<string, number>;
}

let sim: Simulator;
const receiver = new Receiver();

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function effects(): Promise<Effects> {
  return (await (await fetch(`${sim.url}/__sim/effects`)).json()) as Effects;
}

async function fault(rule: Record<string, unknown>): Promise<void> {
  const res = await post('/__sim/faults', rule);
  expect(res.status).toBe(200);
}

const key = (): string => `key-${randomUUID()}`;

beforeAll(async () => {
  const webhookUrl = await receiver.start();
  sim = await startSimulator({ port: 0, webhookUrl, webhookSecret: secret, transcriptionDelayMs: 100 });
});

afterAll(async () => {
  await sim?.close();
  await receiver.close();
});

beforeEach(async () => {
  expect((await post('/__sim/reset', {})).status).toBe(204);
  receiver.received.length = 0;
  receiver.failNext = 0;
});

describe('provider simulator: idempotency', () => {
  it('applies the effect once and replays the first answer for the same key', async () => {
    const k = key();
    const first = await post('/v1/summaries', { text: 'First sentence. Second one.' }, { 'Idempotency-Key': k });
    const second = await post('/v1/summaries', { text: 'First sentence. Second one.' }, { 'Idempotency-Key': k });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const a = (await first.json()) as Record<string, string>;
    const b = await second.json();
    expect(a.summary).toBe('First sentence.');
    expect(a.id).toMatch(/^sum_/);
    expect(b).toEqual(a);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.get('x-request-id')).toBe(a.requestId);
    expect(second.headers.get('x-request-id')).toMatch(/^req_/);
    expect(second.headers.get('x-request-id')).not.toBe(a.requestId);
    const fx = await effects();
    expect(fx.totalApplied).toBe(1);
    expect(fx.byKey[k]).toMatchObject({ applied: 1, requests: 2, path: '/v1/summaries' });
  });

  it('rejects the same key with a different body with 422 and applies nothing more', async () => {
    const k = key();
    expect((await post('/v1/charges', { amountCents: 500, currency: 'eur', customer: 'c1' }, { 'Idempotency-Key': k })).status).toBe(200);
    const reused = await post('/v1/charges', { amountCents: 900, currency: 'eur', customer: 'c1' }, { 'Idempotency-Key': k });
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ error: 'idempotency_key_reused', requestId: expect.stringMatching(/^req_/) });
    // Key order is not a difference.
    const reordered = await post('/v1/charges', { customer: 'c1', currency: 'eur', amountCents: 500 }, { 'Idempotency-Key': k });
    expect(reordered.status).toBe(200);
    expect((await effects()).byKey[k]?.applied).toBe(1);
  });

  it('requires an Idempotency-Key and rejects bad JSON and invalid bodies without storing them', async () => {
    const missing = await post('/v1/notifications', { to: 'a@example.com' });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'missing_idempotency_key' });
    expect(missing.headers.get('x-request-id')).toMatch(/^req_/);

    const k = key();
    expect((await post('/v1/summaries', '{not json', { 'Idempotency-Key': k })).status).toBe(400);
    const invalid = await post('/v1/summaries', { text: '' }, { 'Idempotency-Key': k });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: 'invalid_text' });
    // A validation error is not stored, so the corrected retry with the same key succeeds.
    expect((await post('/v1/summaries', { text: 'ok' }, { 'Idempotency-Key': k })).status).toBe(200);
    expect((await effects()).byKey[k]).toMatchObject({ applied: 1, requests: 3 });

    const unknown = await fetch(`${sim.url}/v1/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });
  });

  it('answers a charge and a receipt with their own ids and exposes the key for reconciliation', async () => {
    const k = key();
    const charge = (await (
      await post('/v1/charges', { amountCents: 1200, currency: 'usd', customer: 'cus_1' }, { 'Idempotency-Key': k })
    ).json()) as Record<string, unknown>;
    expect(charge).toMatchObject({ id: expect.stringMatching(/^ch_/), status: 'succeeded', amountCents: 1200, currency: 'usd' });
    const receipt = await post('/v1/receipts', { chargeId: charge.id, email: 'a@example.com' }, { 'Idempotency-Key': key() });
    expect(await receipt.json()).toMatchObject({ id: expect.stringMatching(/^rcpt_/) });

    const lookup = await fetch(`${sim.url}/v1/idempotency/${encodeURIComponent(k)}`);
    expect(lookup.status).toBe(200);
    expect(await lookup.json()).toMatchObject({ key: k, path: '/v1/charges', status: 200, response: charge });
    expect((await fetch(`${sim.url}/v1/idempotency/${key()}`)).status).toBe(404);
  });
});

describe('provider simulator: faults', () => {
  it('answers 429 with Retry-After, then the retry with the same key succeeds once', async () => {
    await fault({ path: '/v1/summaries', times: 1, status: 429, retryAfter: '2' });
    const k = key();
    const limited = await post('/v1/summaries', { text: 'Hello.' }, { 'Idempotency-Key': k });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(await limited.json()).toMatchObject({ error: 'injected_fault', status: 429 });
    const retry = await post('/v1/summaries', { text: 'Hello.' }, { 'Idempotency-Key': k });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const fx = await effects();
    expect(fx.byKey[k]).toMatchObject({ applied: 1, requests: 2 });
    expect(fx.byKey[k]?.requestTimes).toHaveLength(2);
  });

  it('consumes queued rules first in, first out per path', async () => {
    await fault({ path: '/v1/notifications', times: 1, status: 503 });
    await fault({ path: '/v1/notifications', times: 1, status: 500 });
    const k = key();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await post('/v1/notifications', { to: 'x' }, { 'Idempotency-Key': k })).status);
    expect(statuses).toEqual([503, 500, 200]);
  });

  it('with status 200 and delayMs applies the effect before the answer is sent', async () => {
    await fault({ path: '/v1/charges', times: 1, status: 200, delayMs: 1_500 });
    const k = key();
    const body = { amountCents: 100, currency: 'usd', customer: 'c' };
    const held = post('/v1/charges', body, { 'Idempotency-Key': k, 'X-Tenant-Id': 'acme' });
    const during = await waitFor(async () => {
      const fx = await effects();
      return fx.byKey[k]?.applied === 1 ? fx : undefined;
    }, 'effect applied while the answer is held');
    expect(during.inFlightByTenant.acme).toBe(1);
    // A retry while the first answer is still held gets the stored answer, not a second charge.
    const retry = await post('/v1/charges', body, { 'Idempotency-Key': k });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const first = await held;
    expect(first.status).toBe(200);
    expect(await retry.json()).toEqual(await first.json());
    expect((await effects()).byKey[k]?.applied).toBe(1);
  });

  it('reports peak in-flight requests per tenant', async () => {
    await fault({ path: '/v1/notifications', times: 4, status: 200, delayMs: 2_000 });
    const send = (tenant: string) => post('/v1/notifications', { to: 'x' }, { 'Idempotency-Key': key(), 'X-Tenant-Id': tenant });
    const pending = [send('t-a'), send('t-a'), send('t-a'), send('t-b')];
    await waitFor(async () => {
      const fx = await effects();
      return fx.inFlightByTenant['t-a'] === 3 && fx.inFlightByTenant['t-b'] === 1 ? true : undefined;
    }, 'four requests in flight');
    const responses = await Promise.all(pending);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const fx = await effects();
    expect(fx.peakInFlightByTenant).toMatchObject({ 't-a': 3, 't-b': 1 });
    expect(fx.peakInFlight).toBeGreaterThanOrEqual(4);
    expect(fx.inFlight).toBe(0);
  });

  it('rejects an invalid control body with a message', async () => {
    const res = await post('/__sim/faults', { path: '/v1/summaries', status: 'boom' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/status/);
    expect((await post('/__sim/faults', { path: '/v1/summaries', dropWebhooks: 1 })).status).toBe(400);
  });
});

describe('provider simulator: transcriptions and webhooks', () => {
  async function transcribe(audioUrl: string): Promise<string> {
    const res = await post('/v1/transcriptions', { audioUrl }, { 'Idempotency-Key': key() });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { id: string; status: string };
    expect(body.status).toBe('processing');
    return body.id;
  }

  const getTranscription = async (id: string) =>
    (await (await fetch(`${sim.url}/v1/transcriptions/${id}`)).json()) as { id: string; status: string; text?: string };

  it('completes and delivers a correctly signed webhook', async () => {
    const id = await transcribe('https://audio.example/a.wav');
    const [delivery] = await waitFor(() => {
      const got = receiver.forTranscription(id);
      return got.length > 0 ? got : undefined;
    }, 'transcription webhook');
    const headers = Object.fromEntries(Object.entries(delivery!.headers).map(([k, v]) => [k, String(v)]));
    expect(headers['webhook-id']).toMatch(/^msg_/);
    expect(headers['content-type']).toContain('application/json');
    const event = new Webhook(secret).verify(delivery!.raw, headers);
    expect(event).toEqual({
      type: 'transcription.completed',
      data: { id, status: 'completed', text: 'transcript of https://audio.example/a.wav' },
    });
    expect(() => new Webhook(`whsec_${randomBytes(24).toString('base64')}`).verify(delivery!.raw, headers)).toThrow();
    expect(await getTranscription(id)).toMatchObject({ id, status: 'completed', text: 'transcript of https://audio.example/a.wav' });
    expect((await fetch(`${sim.url}/v1/transcriptions/tr_missing`)).status).toBe(404);
  });

  it('retries a failed delivery with the same webhook-id', async () => {
    receiver.failNext = 1;
    const id = await transcribe('https://audio.example/retry.wav');
    const deliveries = await waitFor(() => {
      const got = receiver.forTranscription(id);
      return got.length >= 2 ? got : undefined;
    }, 'webhook redelivery');
    expect(deliveries[1]!.headers['webhook-id']).toBe(deliveries[0]!.headers['webhook-id']);
  });

  it('drops the next completion webhook when told to', async () => {
    await fault({ path: '/v1/transcriptions', dropWebhooks: 1 });
    const dropped = await transcribe('https://audio.example/dropped.wav');
    await waitFor(async () => ((await getTranscription(dropped)).status === 'completed' ? true : undefined), 'dropped completion');
    const delivered = await transcribe('https://audio.example/delivered.wav');
    await waitFor(() => (receiver.forTranscription(delivered).length > 0 ? true : undefined), 'next webhook');
    expect(receiver.forTranscription(dropped)).toHaveLength(0);
  });
});

describe('provider simulator: lifecycle', () => {
  it('reset clears effects, stored keys and faults', async () => {
    const k = key();
    await post('/v1/summaries', { text: 'x' }, { 'Idempotency-Key': k });
    await fault({ path: '/v1/summaries', times: 5, status: 500 });
    const reset = await post('/__sim/reset', {});
    expect(reset.status).toBe(204);
    expect(reset.headers.get('x-request-id')).toMatch(/^req_/);
    expect(await effects()).toMatchObject({ totalApplied: 0, byKey: {}, peakInFlight: 0, peakInFlightByTenant: {}, inFlight: 0 });
    expect((await fetch(`${sim.url}/v1/idempotency/${k}`)).status).toBe(404);
    expect((await post('/v1/summaries', { text: 'x' }, { 'Idempotency-Key': k })).status).toBe(200);
    expect((await fetch(`${sim.url}/__sim/health`)).status).toBe(200);
  });

  it('close() does not wait for a held answer', async () => {
    const other = await startSimulator({ port: 0 });
    await fetch(`${other.url}/__sim/faults`, {
      method: 'POST',
      body: JSON.stringify({ path: '/v1/summaries', status: 200, delayMs: 60_000 }),
    });
    const held = fetch(`${other.url}/v1/summaries`, {
      method: 'POST',
      headers: { 'Idempotency-Key': key() },
      body: JSON.stringify({ text: 'x' }),
    }).then(
      () => 'answered',
      () => 'aborted',
    );
    await waitFor(async () => {
      const fx = (await (await fetch(`${other.url}/__sim/effects`)).json()) as Effects;
      return fx.inFlight === 1 ? true : undefined;
    }, 'held request');
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await held).toBe('aborted');
  });
});
