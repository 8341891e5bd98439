import { Webhook } from 'standardwebhooks';
import { newId, type LogFn } from './http.js';
import type { TimerSet } from './timers.js';

export interface WebhookTarget {
  url: string;
  signer: Webhook;
}

/** Real providers retry failed deliveries; 3 retries keeps a drill's worst case short. */
const MAX_RETRIES = 3;
const BASE_BACKOFF_MS = 200;
/** A receiver that accepts the connection but never answers must not pin the timer set. */
const ATTEMPT_TIMEOUT_MS = 5_000;

export function createWebhookTarget(url: string, secret: string | undefined): WebhookTarget {
  if (!secret) throw new Error('simulator: webhookSecret (whsec_<base64>) is required when webhookUrl is set');
  // Constructing the signer validates the secret now rather than at the first delivery.
  return { url, signer: new Webhook(secret) };
}

async function attempt(target: WebhookTarget, msgId: string, payload: string, signal: AbortSignal): Promise<number> {
  const now = new Date();
  const response = await fetch(target.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': target.signer.sign(msgId, now, payload),
    },
    body: payload,
    signal: AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Delivers one event, signed per Standard Webhooks. Retries keep the same webhook-id
 * (receivers deduplicate on it) but sign a fresh timestamp, as the spec prescribes.
 * Resolves true when a 2xx was received; never rejects.
 */
export async function deliverWebhook(
  target: WebhookTarget,
  event: { type: string; data: Record<string, unknown> },
  timers: TimerSet,
  log: LogFn,
): Promise<boolean> {
  const msgId = newId('msg');
  const payload = JSON.stringify(event);
  const { signal, release } = timers.controller();
  try {
    for (let retry = 0; retry <= MAX_RETRIES; retry += 1) {
      if (signal.aborted) return false;
      try {
        const status = await attempt(target, msgId, payload, signal);
        if (status >= 200 && status < 300) {
          log('webhook delivered', { webhookId: msgId, type: event.type, status, attempt: retry + 1 });
          return true;
        }
        log('webhook rejected', { webhookId: msgId, type: event.type, status, attempt: retry + 1 });
      } catch (err) {
        if (signal.aborted) return false;
        log('webhook delivery failed', { webhookId: msgId, type: event.type, attempt: retry + 1, error: String(err) });
      }
      if (retry < MAX_RETRIES && !(await timers.sleep(BASE_BACKOFF_MS * 2 ** retry))) return false;
    }
    log('webhook given up', { webhookId: msgId, type: event.type, attempts: MAX_RETRIES + 1 });
    return false;
  } finally {
    release();
  }
}
