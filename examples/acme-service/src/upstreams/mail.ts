// E-mail over SMTP with nodemailer. SMTP has no idempotency key, so the upstream is
// `lookupByKey`: each message's `Message-ID` derives from the effect key, and before an
// in-doubt message is sent again, `lookup` asks the mail server's search API for that
// Message-ID (mailpit's `/api/v1/search?query=message-id:<id>` here; a provider's message
// search in production). Found: its IDs are recorded and nothing is sent twice.
import { createHash } from 'node:crypto';
import nodemailer from 'nodemailer';
import {
  defineUpstream,
  NonRetryableError,
  RetryableError,
  type EffectAnswer,
  type EffectResult,
  type StepContext,
} from 'durable-jobs/jobs';

const FROM = 'Acme <hello@acme.test>';
const smtpUrl = () => process.env.SMTP_URL ?? 'smtp://127.0.0.1:1025';
const searchUrl = () => process.env.MAIL_SEARCH_URL ?? 'http://127.0.0.1:8025';

/** The message's Message-ID (without angle brackets): the same on every attempt and replay of the effect. */
export function messageIdFor(effectKey: string): string {
  return `${createHash('sha256').update(effectKey).digest('hex').slice(0, 32)}@acme.test`;
}

/** SMTP 5xx (mailbox unknown, refused): never retried, with the reply code. Anything else (4xx, a dropped connection) stays in doubt: looked up, then sent. */
export function classifyMailError(raw: unknown): RetryableError | NonRetryableError {
  const err = raw as { message?: string; code?: string; responseCode?: number };
  const message = err?.message ?? String(raw);
  if (typeof err?.responseCode === 'number' && err.responseCode >= 500)
    return new NonRetryableError(message, { errorClass: 'mail_refused', providerCode: `smtp_${err.responseCode}` });
  return new RetryableError(message, { errorClass: 'upstream_unavailable', ...(err?.code ? { providerCode: err.code } : {}) });
}

interface SearchAnswer {
  messages: Array<{ ID: string; MessageID: string }>;
}

/** Whether the message with this effect key's Message-ID is in the mailbox already. */
async function lookupMessage(effectKey: string, c: { signal: AbortSignal }): Promise<EffectAnswer<MailAnswer> | undefined> {
  const messageId = messageIdFor(effectKey);
  const res = await fetch(`${searchUrl()}/api/v1/search?query=${encodeURIComponent(`message-id:${messageId}`)}`, { signal: c.signal });
  if (!res.ok) throw new RetryableError(`mail search answered ${res.status}`, { errorClass: 'lookup_failed' });
  // The search matches substrings: only an exact Message-ID is this effect.
  const found = ((await res.json()) as SearchAnswer).messages.find((m) => m.MessageID === messageId);
  return found ? { response: { messageId }, providerId: found.ID, providerRequestId: messageId } : undefined;
}

export const mail = defineUpstream({
  name: 'mail',
  semantics: 'lookupByKey',
  classify: classifyMailError,
  lookup: lookupMessage,
});

export interface MailAnswer {
  messageId: string;
}

/** One e-mail as the effect `step`: Message-ID from the effect key, one SMTP connection per message. */
export function sendMail(
  ctx: StepContext,
  step: string,
  m: { to: string; subject: string; text: string },
  opts: { storeWithResult?: boolean } = {},
): Promise<EffectResult<MailAnswer>> {
  return ctx.effect<MailAnswer>(
    step,
    async ({ effectKey, timeoutMs }) => {
      const messageId = messageIdFor(effectKey);
      const server = new URL(smtpUrl());
      const transport = nodemailer.createTransport({
        host: server.hostname,
        port: Number(server.port || 25),
        secure: server.protocol === 'smtps:',
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
      });
      try {
        const info = await transport.sendMail({ from: FROM, ...m, messageId: `<${messageId}>` });
        // "250 2.0.0 Ok: queued as <id>": the server's own ID of the message, as its search reports it.
        const queued = /queued as (\S+)/.exec(info.response)?.[1] ?? null;
        return { response: { messageId }, providerId: queued, providerRequestId: messageId };
      } finally {
        transport.close();
      }
    },
    { upstream: mail, ...opts },
  );
}
