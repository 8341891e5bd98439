/**
 * The completion-webhook target: a `job.succeeded` event (job-api/notify.ts) posted to the
 * tenant's endpoint and signed with Standard Webhooks (`standardwebhooks`). `webhook-id` is
 * derived from the effect key, so every retry and replay of one notification carries the same
 * one and the receiver dedupes on it: the upstream is idempotent by key. The signing secret is
 * opened for the call only and never logged.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { NonRetryableError, RetryableError } from '../lib/errors.js';
import { classifyStatus, errorClassForStatus, parseRetryAfter } from '../lib/retry.js';
import { openSecret } from '../lib/sealed-secret.js';
import { getTenantWebhook, WEBHOOK_SECRET_PURPOSE } from '../store/tenant-webhooks.js';
import { defineUpstream, type EffectCall } from '../job-api/upstream.js';
import { refusedDestination } from './notify-destination.js';

export const completionWebhookUpstream = defineUpstream({
  name: 'completion-webhook',
  semantics: 'idempotentByKey',
  // What the call did not classify itself: the request may have arrived (a reset, DNS): retry, in doubt.
  classify: (err) =>
    new RetryableError(`completion webhook unreachable: ${(err as Error)?.message ?? String(err)}`, { errorClass: 'connection_error' }),
});

/** `msg_` + 32 hex characters of the effect key's SHA-256: stable per notification, and not the key itself. */
export function webhookIdFor(effectKey: string): string {
  return `msg_${createHash('sha256').update(effectKey).digest('hex').slice(0, 32)}`;
}

/**
 * A non-2xx answer's class (pure). 408, 429 and 5xx retry (with `Retry-After`); 410 Gone ends
 * the notification (the receiver says the endpoint is gone for good); any other 4xx (and a
 * redirect, which is never followed) is refused for good with its status.
 */
export function webhookFailure(status: number, retryAfter: string | null, nowMs = Date.now()): RetryableError | NonRetryableError {
  const message = `completion webhook answered ${status}`;
  if (status >= 300 && status < 400)
    return new NonRetryableError(`${message} (redirects are not followed)`, { statusCode: status, errorClass: 'redirect_refused' });
  if (status === 410) return new NonRetryableError(`${message}: endpoint gone`, { statusCode: status, errorClass: 'endpoint_gone' });
  if (classifyStatus(status) === 'retryable')
    return new RetryableError(message, {
      statusCode: status,
      errorClass: errorClassForStatus(status),
      retryAfterMs: parseRetryAfter(retryAfter, nowMs),
    });
  return new NonRetryableError(message, { statusCode: status, errorClass: errorClassForStatus(status) });
}

/** One delivery of a stored event to the tenant's endpoint as it is configured now. */
export function completionWebhookCall(
  pool: pg.Pool,
  o: { tenantId: string; event: Record<string, unknown>; allowPrivate: boolean },
): EffectCall<Record<string, unknown>> {
  return async (c) => {
    const hook = await getTenantWebhook(pool, o.tenantId);
    if (!hook)
      throw new NonRetryableError('the tenant has no completion webhook (removed after the job finished)', { errorClass: 'webhook_unset' });
    const refused = await refusedDestination(hook.url, o.allowPrivate);
    if (refused) throw new NonRetryableError(refused, { errorClass: 'destination_refused' });
    const id = webhookIdFor(c.effectKey);
    const at = new Date();
    const body = JSON.stringify(o.event);
    // Loaded on first use: an optional peer, needed only by a worker that delivers webhooks.
    const { Webhook } = await import('standardwebhooks');
    const signature = new Webhook(openSecret(hook.secret_sealed, WEBHOOK_SECRET_PURPOSE)).sign(id, at, body);
    const res = await fetch(hook.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      redirect: 'manual',
      signal: c.signal,
    });
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok) throw webhookFailure(res.status, res.headers.get('retry-after'));
    return { response: { status: res.status }, providerId: id, status: res.status };
  };
}
