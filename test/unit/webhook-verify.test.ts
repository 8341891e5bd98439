import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../server/routes-webhooks.js';
import { parseEvent, type WebhookEvent } from '../../services/webhooks.js';
import { routeEvent, webhookRoutes } from '../../services/webhook-routes.js';
import { defaultJobRegistry } from '../../jobs/index.js';

// What `subjectOf` answered before routes moved into the definitions: the transcribe type's route, through the registry.
const routes = webhookRoutes(defaultJobRegistry);
function subjectOf(event: WebhookEvent) {
  const r = routeEvent(routes, { webhookId: 'msg_1', source: 'sim', tenantId: null, ...event });
  if (r.kind === 'ignore') return undefined;
  if (r.kind === 'invalid') return { error: r.detail };
  return r.kind === 'signal' && 'providerId' in r.target ? { subject: r.target.providerId, step: r.target.step } : { other: r };
}

const secret = (label: string) => `whsec_${Buffer.from(`unit-test-secret-${label}-0123456789`).toString('base64')}`;
const OLD = secret('old');
const NEW = secret('new');
const body = Buffer.from(JSON.stringify({ type: 'transcription.completed', data: { id: 'tr_1', status: 'completed', text: 'hi' } }));

function signed(s: string, opts: { id?: string; at?: Date; payload?: Buffer } = {}) {
  const id = opts.id ?? 'msg_1';
  const at = opts.at ?? new Date();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(s).sign(id, at, opts.payload ?? body),
  };
}

describe('verifyWebhook (Standard Webhooks over the raw bytes)', () => {
  const verifiers = [new Webhook(NEW), new Webhook(OLD)];

  it('accepts a valid signature and returns the webhook-id', () => {
    expect(verifyWebhook(verifiers, body, signed(NEW))).toEqual({ ok: true, webhookId: 'msg_1' });
  });

  it('accepts both the old and the new secret during a rotation', () => {
    expect(verifyWebhook(verifiers, body, signed(OLD)).ok).toBe(true);
    expect(verifyWebhook(verifiers, body, signed(NEW)).ok).toBe(true);
    // A sender that lists both signatures (space-separated) also passes.
    const both = { ...signed(NEW), 'webhook-signature': `${signed(OLD)['webhook-signature']} ${signed(NEW)['webhook-signature']}` };
    expect(verifyWebhook([new Webhook(OLD)], body, both).ok).toBe(true);
  });

  it('refuses a secret that is no longer configured', () => {
    expect(verifyWebhook([new Webhook(NEW)], body, signed(OLD))).toMatchObject({ ok: false });
  });

  it('refuses a tampered body, a bad signature and a changed webhook-id', () => {
    const h = signed(NEW);
    expect(verifyWebhook(verifiers, Buffer.from(body.toString().replace('hi', 'ho')), h).ok).toBe(false);
    expect(verifyWebhook(verifiers, body, { ...h, 'webhook-signature': 'v1,AAAA' }).ok).toBe(false);
    expect(verifyWebhook(verifiers, body, { ...h, 'webhook-id': 'msg_2' }).ok).toBe(false);
  });

  it('refuses timestamps outside ±5 minutes, even when correctly signed', () => {
    const stale = verifyWebhook(verifiers, body, signed(NEW, { at: new Date(Date.now() - 6 * 60_000) }));
    const future = verifyWebhook(verifiers, body, signed(NEW, { at: new Date(Date.now() + 6 * 60_000) }));
    expect(stale).toMatchObject({ ok: false, reason: expect.stringMatching(/too old/) });
    expect(future).toMatchObject({ ok: false, reason: expect.stringMatching(/too new/) });
    expect(verifyWebhook(verifiers, body, signed(NEW, { at: new Date(Date.now() - 4 * 60_000) })).ok).toBe(true);
  });

  it('refuses missing or repeated headers', () => {
    const h = signed(NEW);
    for (const name of Object.keys(h) as Array<keyof typeof h>) {
      const { [name]: _dropped, ...rest } = h;
      expect(verifyWebhook(verifiers, body, rest)).toEqual({ ok: false, reason: `missing ${name} header` });
    }
    expect(verifyWebhook(verifiers, body, { ...h, 'webhook-id': ['a', 'b'] }).ok).toBe(false);
  });
});

describe('parseEvent and subjectOf (after verification)', () => {
  it('parses an event and names its subject', () => {
    const parsed = parseEvent(body);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(subjectOf(parsed.event)).toEqual({ subject: 'tr_1', step: 'transcribe' });
  });

  it('reports malformed JSON and wrong shapes (the route answers 400)', () => {
    expect(parseEvent(Buffer.from('{"type":'))).toEqual({ ok: false, detail: 'the body is not valid JSON' });
    expect(parseEvent(Buffer.from('[]')).ok).toBe(false);
    expect(parseEvent(Buffer.from('{"data":{}}')).ok).toBe(false);
    expect(parseEvent(Buffer.from('{"type":"x","data":"y"}')).ok).toBe(false);
  });

  it('ignores event types no job waits for, and requires the transcription ID', () => {
    expect(subjectOf({ type: 'invoice.paid', data: {} })).toBeUndefined();
    expect(subjectOf({ type: 'transcription.completed', data: {} })).toMatchObject({ error: expect.any(String) });
  });
});
