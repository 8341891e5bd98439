/**
 * The e-mail target. With `SMTP_URL`: nodemailer over SMTP, `Message-ID` derived from the
 * effect key (the same on every attempt), and semantics `none`: SMTP has no idempotency key,
 * so a send that may have reached the server (the connection dropped after DATA, a timeout) is
 * never re-sent blind. It stops as `effect_in_doubt` and the notification ends failed with that
 * evidence, for an operator to replay (one e-mail too few, never a duplicate). A refusal the
 * server gave before accepting the message (a 4yz reply, the connection refused) is not in
 * doubt and retries. Without `SMTP_URL`, the worker's provider (`PROVIDER_URL`, the simulator's
 * `POST /v1/notifications`, itself an `httpUpstream` declaration) takes the e-mail.
 */
import { createHash } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import { NonRetryableError, RetryableError } from '../lib/errors.js';
import { defineUpstream, type EffectCall, type Upstream } from '../job-api/upstream.js';
import type { Provider } from './provider.js';
import { SMTP_URL, type NotifyConfig } from './notify-config.js';

/** A stored e-mail row's message (older rows said `body` for `text`). */
export interface StoredEmail {
  to: string;
  subject?: string;
  text?: string;
  body?: string;
}

/** `<64 hex of SHA-256(effect key)@domain of SMTP_FROM>`: stable per notification, and not the key itself. */
export function messageIdFor(effectKey: string, domain: string): string {
  return `<${createHash('sha256').update(effectKey).digest('hex')}@${domain}>`;
}

/**
 * An SMTP error's class (pure). A reply code says what the server decided: 4yz retries, 5yz is
 * refused for good. No reply while connecting means nothing was sent: retry, not in doubt
 * (recorded as 421, SMTP's "service not available"). Anything else may have been accepted.
 */
export function classifySmtp(err: unknown): RetryableError | NonRetryableError {
  const e = err as { responseCode?: number; command?: string; code?: string; message?: string };
  const message = `smtp: ${e?.message ?? String(err)}`.slice(0, 300);
  const code = e?.responseCode;
  if (code !== undefined && code >= 500) return new NonRetryableError(message, { statusCode: code, errorClass: 'smtp_rejected' });
  if (code !== undefined && code >= 400) return new RetryableError(message, { statusCode: code, errorClass: 'smtp_deferred' });
  if (e?.command === 'CONN' || e?.code === 'ECONNREFUSED' || e?.code === 'ECONNECTION' || e?.code === 'EDNS')
    return new RetryableError(message, { statusCode: 421, errorClass: 'connection_refused' });
  return new RetryableError(message, { errorClass: 'connection_error' });
}

export const smtpUpstream = defineUpstream({ name: 'smtp', semantics: 'none', classify: classifySmtp, credentials: [SMTP_URL] });

let transport: { url: string; t: Transporter } | undefined;

/**
 * One transport per process (its URL is read once); no pooling: one connection per send keeps
 * the doubt window per message. nodemailer is an optional peer, loaded only where SMTP is set.
 */
async function transportFor(url: string): Promise<Transporter> {
  if (transport?.url !== url) {
    const nodemailer = (await import('nodemailer')).default;
    transport = { url, t: nodemailer.createTransport(url) };
  }
  return transport.t;
}

function smtpCall(smtp: NonNullable<NotifyConfig['smtp']>, m: StoredEmail): EffectCall {
  return async (c) => {
    const messageId = messageIdFor(c.effectKey, smtp.domain);
    const info = await (
      await transportFor(smtp.url.value())
    ).sendMail({
      from: smtp.from,
      to: m.to,
      subject: m.subject ?? '',
      text: m.text ?? m.body ?? '',
      messageId,
    });
    return { response: { messageId, accepted: info.accepted?.length ?? 0 }, providerId: messageId, status: 250 };
  };
}

/** The simulator's dialect, through the worker's provider (an `httpUpstream`). */
function providerCall(provider: Provider, tenantId: string, m: StoredEmail): EffectCall {
  return async (c) => {
    const r = await provider({
      path: '/v1/notifications',
      body: { to: m.to, subject: m.subject, body: m.text ?? m.body },
      effectKey: c.effectKey,
      tenantId,
      timeoutMs: c.timeoutMs,
      signal: c.signal,
    });
    return {
      response: r.body,
      providerId: typeof r.body.id === 'string' ? r.body.id : null,
      providerRequestId: r.requestId,
      status: r.status,
    };
  };
}

const providerUpstreams = new Map<string, Upstream>();
/** The provider as an upstream (idempotent by key: the simulator answers a repeated key with its first response). */
function providerUpstream(name: string): Upstream {
  let u = providerUpstreams.get(name);
  if (!u) {
    // The provider throws classified errors; anything else may have arrived: retry, in doubt.
    u = defineUpstream({
      name,
      semantics: 'idempotentByKey',
      classify: (err) =>
        new RetryableError(`provider unreachable: ${(err as Error)?.message ?? String(err)}`, { errorClass: 'connection_error' }),
    });
    providerUpstreams.set(name, u);
  }
  return u;
}

/** The e-mail's call and the upstream it goes through. */
export function emailDelivery(
  cfg: NotifyConfig,
  o: { provider: Provider; tenantId: string; email: StoredEmail },
): { call: EffectCall; through: Upstream } {
  if (cfg.smtp) return { call: smtpCall(cfg.smtp, o.email), through: smtpUpstream };
  return { call: providerCall(o.provider, o.tenantId, o.email), through: providerUpstream(o.provider.upstreamName) };
}
