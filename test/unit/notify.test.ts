import { describe, expect, it } from 'vitest';
import { fromDomain, notifyConfigFrom } from '../../activities/notify-config.js';
import { classifySmtp, messageIdFor } from '../../activities/notify-email.js';
import { webhookFailure, webhookIdFor } from '../../activities/notify-webhook.js';
import { plannedNotifications, resolveNotify } from '../../job-api/notify.js';
import { NonRetryableError, RetryableError } from '../../lib/errors.js';
import { openSecret, sealSecret } from '../../lib/sealed-secret.js';
import { serverSecretFrom } from '../../lib/secret.js';
import { isInternalAddress, webhookUrlProblem } from '../../lib/webhook-url.js';
import { NOTIFICATION_BUNDLE, outboxRowsOf } from '../../store/outbox.js';

const job = { jobId: 'j1', jobType: 't', tenantId: 'acme', input: { email: 'a@b.example' }, result: { ok: 1 }, at: new Date(0) };

describe('declared notifications', () => {
  const notify = resolveNotify<{ email?: string }>('t', {
    completionWebhook: true,
    email: (i, _r, j) => (i.email ? { to: i.email, subject: 's', text: j.jobId } : undefined),
  });
  it('plans the e-mail and, only for a tenant with an endpoint, the completion event (without the result unless asked)', () => {
    expect(plannedNotifications(notify, { ...job, tenantHasWebhook: false })).toEqual([
      { kind: 'email', payload: { to: 'a@b.example', subject: 's', text: 'j1' } },
    ]);
    const both = plannedNotifications(notify, { ...job, tenantHasWebhook: true });
    expect(both[1]).toEqual({
      kind: 'completion-webhook',
      payload: {
        type: 'job.succeeded',
        timestamp: '1970-01-01T00:00:00.000Z',
        data: { jobId: 'j1', type: 't', tenantId: 'acme', status: 'succeeded' },
      },
    });
    const withResult = resolveNotify('t', { completionWebhook: { includeResult: true } });
    expect(plannedNotifications(withResult, { ...job, tenantHasWebhook: true })[0]!.payload.data).toMatchObject({ result: { ok: 1 } });
    expect(plannedNotifications(notify, { ...job, input: {}, tenantHasWebhook: false })).toEqual([]);
  });
  it('refuses an unknown target', () => {
    expect(() => resolveNotify('t', { sms: true } as never)).toThrow('notify.sms is not a notification target');
  });
  it('writes a bundle as one row per kind, each keyed by its own step', () => {
    const rows = outboxRowsOf({
      jobId: 'j1',
      kind: NOTIFICATION_BUNDLE,
      effectKey: 'j1:notify-notifications',
      payload: {
        rows: [
          { kind: 'email', payload: { a: 1 } },
          { kind: 'completion-webhook', payload: { b: 2 } },
        ],
      },
      deliverWithinMs: 1,
    });
    expect(rows.map((r) => r.effectKey)).toEqual(['j1:notify-email', 'j1:notify-completion-webhook']);
  });
});

describe('completion webhook', () => {
  it('derives a stable webhook-id that is not the key', () => {
    expect(webhookIdFor('j1:notify-completion-webhook')).toBe(webhookIdFor('j1:notify-completion-webhook'));
    expect(webhookIdFor('j1:notify-completion-webhook')).toMatch(/^msg_[0-9a-f]{32}$/);
  });
  it('classifies answers: 5xx/408/429 retry, 410 and other 4xx end, redirects are refused', () => {
    expect(webhookFailure(503, '2', 0)).toBeInstanceOf(RetryableError);
    expect((webhookFailure(429, '2', 0) as RetryableError).details.retryAfterMs).toBe(2000);
    expect(webhookFailure(408, null)).toBeInstanceOf(RetryableError);
    expect(webhookFailure(410, null).details).toMatchObject({ errorClass: 'endpoint_gone', statusCode: 410 });
    expect(webhookFailure(400, null)).toBeInstanceOf(NonRetryableError);
    expect(webhookFailure(301, null).details.errorClass).toBe('redirect_refused');
  });
  it('knows internal addresses and refuses non-http(s) URLs', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ])
      expect(isInternalAddress(a), a).toBe(true);
    for (const a of ['93.184.216.34', '2606:2800:220:1::1']) expect(isInternalAddress(a), a).toBe(false);
    expect(webhookUrlProblem('file:///etc/passwd')).toBe('url must use http or https');
    expect(webhookUrlProblem('https://u:p@example.com/')).toBe('url must not carry credentials');
    expect(webhookUrlProblem('https://example.com/hook')).toBeUndefined();
  });
  it('seals a secret that only a listed server secret opens', () => {
    const one = serverSecretFrom('a'.repeat(40), undefined)!;
    const rotated = serverSecretFrom(`${'b'.repeat(40)},${'a'.repeat(40)}`, undefined)!;
    const sealed = sealSecret('whsec_abc', 'p', one);
    expect(sealed.toString('latin1')).not.toContain('whsec_abc');
    expect(openSecret(sealed, 'p', rotated)).toBe('whsec_abc');
    expect(() => openSecret(sealed, 'other-purpose', one)).toThrow('no listed server secret opens it');
    expect(() => openSecret(sealed, 'p', serverSecretFrom('c'.repeat(40), undefined)!)).toThrow();
  });
});

describe('e-mail over SMTP', () => {
  it('derives the Message-ID from the effect key and the sender domain', () => {
    expect(messageIdFor('j1:notify-email', 'acme.example')).toMatch(/^<[0-9a-f]{64}@acme\.example>$/);
    expect(fromDomain('Acme <jobs@Acme.Example>')).toBe('acme.example');
    expect(fromDomain('not an address')).toBeUndefined();
  });
  it('asks for SMTP_FROM with SMTP_URL only where a job type sends e-mail: a team may use SMTP_URL for its own upstream', () => {
    const env = { SMTP_URL: 'smtp://127.0.0.1:1025' };
    expect(() => notifyConfigFrom(env, true)).toThrow(/SMTP_FROM must be the sender address/);
    expect(notifyConfigFrom(env, false).smtp).toBeUndefined();
    expect(notifyConfigFrom({ ...env, SMTP_FROM: 'Acme <jobs@acme.example>' }, true).smtp).toMatchObject({ domain: 'acme.example' });
  });
  it('retries what the server deferred or never took, refuses what it rejected, and leaves the rest in doubt', () => {
    expect(classifySmtp({ responseCode: 550, message: 'no such user' })).toBeInstanceOf(NonRetryableError);
    expect(classifySmtp({ responseCode: 451 }).details).toMatchObject({ statusCode: 451, errorClass: 'smtp_deferred' });
    expect(classifySmtp({ code: 'ECONNECTION', command: 'CONN' }).details).toMatchObject({ statusCode: 421 });
    expect(classifySmtp({ code: 'ETIMEDOUT', command: 'DATA' }).details).toEqual({ errorClass: 'connection_error' });
  });
});
