import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { WebhookVerificationError, type Webhook } from 'standardwebhooks';
import { pgOr503 } from '../lib/db.js';
import { parseEvent, type WebhookService } from '../services/webhooks.js';
import { requireAdmin, type AdminKeys } from './auth.js';
import { access } from './roles.js';
import { registerWebhookMetrics } from './metrics.js';
import { problem, sendProblem } from './problems.js';
import type { WebhookKeyring } from './webhook-keyring.js';

export interface WebhookRouteDeps {
  webhooks: WebhookService;
  adminApiKey: AdminKeys;
  /** source → `whsec_` verifiers (all verify: rotation) and tenant binding, replaceable while serving (SIGHUP). */
  webhookKeyring: WebhookKeyring;
}

const MAX_WEBHOOK_ID = 255;

type Verified = { ok: true; webhookId: string } | { ok: false; reason: string };

/**
 * Standard Webhooks verification over the raw bytes (the library: HMAC-SHA256 over
 * `id.timestamp.body`, constant-time comparison, ±5 minutes). Any of the source's secrets
 * may match: during a rotation the provider signs with the new one while old deliveries
 * (and retries) still carry the old one.
 */
export function verifyWebhook(
  verifiers: readonly Webhook[],
  raw: Buffer,
  headers: Record<string, string | string[] | undefined>,
): Verified {
  const h: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const v = headers[name];
    if (typeof v !== 'string' || v === '') return { ok: false, reason: `missing ${name} header` };
    h[name] = v;
  }
  // Strictly an integer of seconds: the library's parseInt would accept '1700000000abc' (F12).
  if (!/^(0|[1-9][0-9]{0,14})$/.test(h['webhook-timestamp']!))
    return { ok: false, reason: 'invalid webhook-timestamp header: must be an integer of seconds since the epoch' };
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

/** An unverified header may still be logged as a correlation hint, but only printable and short. */
const safeId = (v: unknown) => (typeof v === 'string' ? v.replace(/[^\x21-\x7e]/g, '').slice(0, 100) : undefined);

export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookRouteDeps, registry: Registry): void {
  const deliveries = registerWebhookMetrics(registry);

  async function receive(req: FastifyRequest<{ Params: { source: string } }>, reply: FastifyReply) {
    const { source } = req.params;
    // Taken once: a reload during this request does not change what it verifies with, nor the tenant it acts for.
    const bound = deps.webhookKeyring.source(source);
    if (!bound)
      return sendProblem(
        reply,
        problem(404, 'unknown-webhook-source', 'Unknown webhook source', `no webhook secrets are configured for source "${source}"`),
      );
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const verified = verifyWebhook(bound.verifiers, raw, req.headers);
    if (!verified.ok) {
      deliveries.inc({ source, result: 'unauthorized' });
      req.log.warn(
        { source, webhookId: safeId(req.headers['webhook-id']), outcome: 'unauthorized', reason: verified.reason },
        'webhook rejected',
      );
      return sendProblem(
        reply,
        problem(401, 'invalid-webhook-signature', 'Invalid webhook signature', `${verified.reason}; nothing was recorded`),
      );
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
    const event = parsed.event;
    const from = { source, tenantId: bound.tenantId };
    // The subscribed type's route decides (start a job, signal one, or nothing): an event it
    // cannot use is the sender's bug, answered 400 with nothing recorded.
    const routed = deps.webhooks.route(from, webhookId, event);
    if (routed.kind === 'invalid') return malformed(routed.detail);

    const { row, outcome, duplicate, conflict, refusal } = await pgOr503(() =>
      deps.webhooks.accept(from, webhookId, raw, event, routed, req.log),
    );
    if (conflict) {
      deliveries.inc({ source, result: 'conflict' });
      req.log.warn(
        { source, webhookId, eventType: event.type, jobId: row.job_id, outcome: 'conflict', conflicts: row.conflicting_deliveries },
        'webhook-id delivered again with a different body; refused',
      );
      return sendProblem(
        reply,
        problem(
          409,
          'webhook-id-conflict',
          'webhook-id reused with a different body',
          `webhook-id ${webhookId} was delivered before with a different body; this delivery was recorded as a conflict and not processed`,
        ),
      );
    }
    if (outcome === 'refused') {
      deliveries.inc({ source, result: 'refused' });
      req.log.warn(
        { source, webhookId, eventType: event.type, jobType: row.job_type, jobId: row.job_id, outcome, duplicate, refusal },
        'webhook refused',
      );
      // Recorded, nothing started or signalled. The answer never names the job or tenant it addressed.
      return sendProblem(
        reply,
        problem(
          403,
          'webhook-refused',
          'Webhook refused',
          `${refusal ?? 'refused'}; the delivery was recorded as refused and not processed`,
        ),
      );
    }
    deliveries.inc({ source, result: duplicate ? 'duplicate' : outcome });
    req.log.info(
      { source, webhookId, eventType: event.type, jobId: row.job_id, outcome, duplicate, timesReceived: row.times_received },
      'webhook received',
    );
    // A failed signal is not the provider's problem: the delivery is durable (`pending_signal`)
    // and the compensation scan signals it (as would a redelivery). Answering 5xx would only make
    // the provider retry what we already hold (the contract: 2xx once the delivery is durable).
    // The answer's `outcome` says `pending_signal`.
    // A started job's ID is the sender's own (its tenant's): it may poll it.
    return reply
      .code(duplicate ? 200 : 202)
      .send({ webhookId, outcome, duplicate, ...(outcome === 'started' || outcome === 'pending_start' ? { jobId: row.job_id } : {}) });
  }

  // Its own scope and content-type handling: the body stays raw bytes (the signature covers
  // exactly those), and the app-wide JSON parser cannot answer 400 before the signature is
  // checked (a forged request with broken JSON must get 401).
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post('/v1/webhooks/:source', receive);
  });

  app.get(
    '/v1/admin/webhook-deliveries/:source/:webhookId',
    access('viewer'),
    async (req: FastifyRequest<{ Params: { source: string; webhookId: string } }>, reply) => {
      if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
      const row = await pgOr503(() => deps.webhooks.delivery(req.params.source, req.params.webhookId));
      if (!row)
        return sendProblem(reply, problem(404, 'not-found', 'Not found', 'no delivery with this source and webhook-id was recorded'));
      return {
        source: row.source,
        webhookId: row.webhook_id,
        eventType: row.event_type,
        subject: row.subject,
        jobId: row.job_id,
        outcome: row.outcome,
        timesReceived: row.times_received,
        firstSeenAt: row.first_seen_at.toISOString(),
        lastReceivedAt: row.last_received_at.toISOString(),
        processedAt: row.processed_at?.toISOString() ?? null,
        sourceTenantId: row.source_tenant_id,
        jobType: row.job_type,
        refusal: row.refusal,
        conflictingDeliveries: row.conflicting_deliveries,
        lastConflictAt: row.last_conflict_at?.toISOString() ?? null,
      };
    },
  );
}
