import { findUnstorableText } from '../lib/json-safety.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { pgOr503, withTransaction } from '../lib/db.js';
import {
  claimPendingSignal, getDelivery, jobForProviderObject, lockSubject, recordDelivery, setSignalOutcome,
  type DeliveryOutcome, type DeliveryRow,
} from '../store/webhook-deliveries.js';
import { toEvent, transcriptionCompletedSignal, TRANSCRIPTION_COMPLETED, TRANSCRIPTION_STEP } from '../contract/messages.js';
import type { AppDeps } from './app.js';
import { requireAdmin } from './auth.js';
import { problem, sendProblem } from './problems.js';

export type WebhookDeps = Pick<AppDeps, 'pool' | 'temporal' | 'adminApiKey' | 'webhookSecrets'>;

/**
 * A delivery still `pending_signal` is re-signalled by a redelivery only after this lease:
 * concurrent duplicates leave it to the request that is signalling right now. Equal to the
 * Retry-After we answer when the signal fails, so the provider's retry finds it free.
 */
export const SIGNAL_LEASE_MS = 5_000;
/** The signal is one RPC; past this deadline the delivery stays `pending_signal` and we answer 503. */
const SIGNAL_DEADLINE_MS = 3_000;
const MAX_WEBHOOK_ID = 255;

type Verified = { ok: true; webhookId: string } | { ok: false; reason: string };

/**
 * Standard Webhooks verification over the raw bytes (the library: HMAC-SHA256 over
 * `id.timestamp.body`, constant-time comparison, ±5 minutes). Any of the source's secrets
 * may match: during a rotation the provider signs with the new one while old deliveries
 * (and retries) still carry the old one.
 */
export function verifyWebhook(verifiers: Webhook[], raw: Buffer, headers: Record<string, string | string[] | undefined>): Verified {
  const h: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const v = headers[name];
    if (typeof v !== 'string' || v === '') return { ok: false, reason: `missing ${name} header` };
    h[name] = v;
  }
  let reason = 'no matching signature';
  for (const wh of verifiers) {
    try {
      wh.verify(raw, h, { jsonParse: false });
      return { ok: true, webhookId: h['webhook-id']! };
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      // The timestamp check does not depend on the secret: no other secret can pass it.
      if (/timestamp|Signature Headers/i.test(err.message)) return { ok: false, reason: err.message };
      reason = err.message;
    }
  }
  return { ok: false, reason };
}

export interface WebhookEvent { type: string; data: Record<string, unknown> }

/** Parsed only after verification: bad JSON under a valid signature is the sender's bug (400), not an attack (401). */
export function parseEvent(raw: Buffer): { ok: true; event: WebhookEvent } | { ok: false; detail: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, detail: 'the body is not valid JSON' };
  }
  const o = json as { type?: unknown; data?: unknown };
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { ok: false, detail: 'the body must be a JSON object' };
  if (typeof o.type !== 'string' || o.type.length === 0 || o.type.length > 200) return { ok: false, detail: 'type must be a string of 1-200 characters' };
  if (o.data !== undefined && (typeof o.data !== 'object' || o.data === null || Array.isArray(o.data))) return { ok: false, detail: 'data must be an object' };
  // Postgres cannot store these in jsonb: refuse with 400 (the sender's bug) rather than 500,
  // which would make the provider redeliver the same unstorable event forever.
  const unstorable = findUnstorableText(json, 'body');
  if (unstorable) return { ok: false, detail: `${unstorable.path} ${unstorable.message}` };
  return { ok: true, event: { type: o.type, data: (o.data ?? {}) as Record<string, unknown> } };
}

/** Which provider object an event is about, for the event types a job waits for; undefined: ignored. */
export function subjectOf(event: WebhookEvent): { subject: string; step: string } | { error: string } | undefined {
  if (event.type !== TRANSCRIPTION_COMPLETED) return undefined;
  const id = event.data.id;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) return { error: 'data.id must be the transcription ID (1-200 characters)' };
  return { subject: id, step: TRANSCRIPTION_STEP };
}

/** An unverified header may still be logged as a correlation hint, but only printable and short. */
const safeId = (v: unknown) => (typeof v === 'string' ? v.replace(/[^\x21-\x7e]/g, '').slice(0, 100) : undefined);

export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookDeps, registry: Registry): void {
  const verifiers = new Map(Object.entries(deps.webhookSecrets).map(([source, secrets]) => [source, secrets.map((s) => new Webhook(s))]));
  const deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Inbound webhook requests by source and result (an outcome, duplicate, unauthorized or malformed)',
    labelNames: ['source', 'result'] as const,
    registers: [registry],
  });

  /** Signals the job once; a failure leaves the delivery `pending_signal` for a redelivery or the scan. */
  async function signalJob(row: DeliveryRow, log: FastifyRequest['log']): Promise<DeliveryOutcome> {
    const event = toEvent(row.webhook_id, row.payload);
    try {
      await deps.temporal.connection.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        deps.temporal.workflow.getHandle(row.job_id!).signal(transcriptionCompletedSignal, event));
      await setSignalOutcome(deps.pool, row.source, row.webhook_id, 'signalled');
      return 'signalled';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // The job already finished (for example by polling): the event has nothing left to do.
        await setSignalOutcome(deps.pool, row.source, row.webhook_id, 'job_closed');
        return 'job_closed';
      }
      log.warn({ webhookId: row.webhook_id, jobId: row.job_id, err: { name: (err as Error).name, message: (err as Error).message } }, 'webhook recorded but the job could not be signalled; it stays pending_signal');
      return 'pending_signal';
    }
  }

  /**
   * The dedup row and the decision about the event (signal its job, wait for the job to
   * claim it, or ignore it), in one transaction; under the subject lock so that a job
   * storing its provider ID right now cannot miss this event (see `lockSubject`).
   */
  function record(source: string, webhookId: string, event: WebhookEvent, target: { subject: string; step: string } | undefined) {
    return withTransaction(deps.pool, async (tx) => {
      let jobId: string | undefined;
      if (target) {
        await lockSubject(tx, event.type, target.subject);
        jobId = await jobForProviderObject(tx, target.step, target.subject);
      }
      const outcome: DeliveryOutcome = !target ? 'ignored' : jobId ? 'pending_signal' : 'unmatched';
      return recordDelivery(tx, { source, webhookId, eventType: event.type, subject: target?.subject ?? null, payload: event.data, jobId: jobId ?? null, outcome });
    });
  }

  async function receive(req: FastifyRequest<{ Params: { source: string } }>, reply: FastifyReply) {
    const { source } = req.params;
    const sourceVerifiers = verifiers.get(source);
    if (!sourceVerifiers) return sendProblem(reply, problem(404, 'unknown-webhook-source', 'Unknown webhook source', `no webhook secrets are configured for source "${source}"`));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const verified = verifyWebhook(sourceVerifiers, raw, req.headers);
    if (!verified.ok) {
      deliveries.inc({ source, result: 'unauthorized' });
      req.log.warn({ source, webhookId: safeId(req.headers['webhook-id']), outcome: 'unauthorized', reason: verified.reason }, 'webhook rejected');
      return sendProblem(reply, problem(401, 'invalid-webhook-signature', 'Invalid webhook signature', `${verified.reason}; nothing was recorded`));
    }
    const { webhookId } = verified;
    const malformed = (detail: string) => {
      deliveries.inc({ source, result: 'malformed' });
      req.log.warn({ source, webhookId: safeId(webhookId), outcome: 'malformed' }, 'webhook with a valid signature but an invalid body');
      return sendProblem(reply, problem(400, 'malformed-webhook', 'Malformed webhook event', `${detail}; nothing was recorded`));
    };
    if (webhookId.length > MAX_WEBHOOK_ID) return malformed(`webhook-id must be at most ${MAX_WEBHOOK_ID} characters`);
    const parsed = parseEvent(raw);
    if (!parsed.ok) return malformed(parsed.detail);
    const target = subjectOf(parsed.event);
    if (target && 'error' in target) return malformed(target.error);
    const event = parsed.event;

    const row: DeliveryRow & { inserted: boolean } = await pgOr503(() => record(source, webhookId, event, target));

    let outcome = row.outcome;
    let signalFailed = false;
    if (row.outcome === 'pending_signal' && (row.inserted || await claimPendingSignal(deps.pool, source, webhookId, SIGNAL_LEASE_MS))) {
      outcome = await signalJob(row, req.log);
      signalFailed = outcome === 'pending_signal';
    }
    const duplicate = !row.inserted;
    deliveries.inc({ source, result: duplicate ? 'duplicate' : outcome });
    req.log.info({ source, webhookId, eventType: event.type, jobId: row.job_id, outcome, duplicate, timesReceived: row.times_received }, 'webhook received');
    if (signalFailed) {
      return sendProblem(reply, problem(503, 'webhook-pending', 'Recorded, not yet delivered to its job',
        'the event is stored; redeliver it (same webhook-id) to complete the hand-off', { retryAfterSeconds: SIGNAL_LEASE_MS / 1000 }));
    }
    return reply.code(duplicate ? 200 : 202).send({ webhookId, outcome, duplicate });
  }

  // Its own scope and content-type handling: the body stays raw bytes (the signature covers
  // exactly those), and the app-wide JSON parser cannot answer 400 before the signature is
  // checked (a forged request with broken JSON must get 401).
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post('/v1/webhooks/:source', receive);
  });

  app.get('/v1/admin/webhook-deliveries/:source/:webhookId', async (req: FastifyRequest<{ Params: { source: string; webhookId: string } }>, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const row = await getDelivery(deps.pool, req.params.source, req.params.webhookId);
    if (!row) return sendProblem(reply, problem(404, 'not-found', 'Not found', 'no delivery with this source and webhook-id was recorded'));
    return {
      source: row.source, webhookId: row.webhook_id, eventType: row.event_type, subject: row.subject, jobId: row.job_id,
      outcome: row.outcome, timesReceived: row.times_received, firstSeenAt: row.first_seen_at.toISOString(),
      lastReceivedAt: row.last_received_at.toISOString(), processedAt: row.processed_at?.toISOString() ?? null,
    };
  });
}
