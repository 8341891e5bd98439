import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { z } from 'zod';
import { withTransaction } from '../lib/db.js';
import { NotFoundError, UnavailableError, ValidationError } from '../lib/errors.js';
import { reopenFailedEffect } from '../store/dead-letters.js';
import { getIntent } from '../store/intents.js';
import { getOutboxRow, listOutbox, resolveFailedOutbox, type OutboxRow } from '../store/outbox.js';
import type { StepArgs } from '../activities/job-steps.js';
import { isJobType } from '../workflows/job-types.js';
import { requireAdmin } from './auth.js';
import { problem, sendProblem } from './problems.js';

export interface OutboxRouteDeps { pool: pg.Pool; temporal: Client; adminApiKey: string | undefined; taskQueue: string }

const STATES = ['pending', 'delivered', 'failed', 'discarded'] as const;
const LIST_SCHEMA = z.object({
  state: z.enum(STATES, { error: 'state must be one of: pending, delivered, failed, discarded' }).optional(),
  limit: z.coerce.number({ error: 'limit must be a number' }).int('limit must be a whole number').min(1, 'limit must be at least 1').max(1_000, 'limit must be at most 1000').optional(),
}).strict();
export const OUTBOX_REPLAY_SCHEMA = z.object({ reason: z.string({ error: 'reason must be a string' }).trim().min(1, 'reason must not be empty').max(500, 'reason must be at most 500 characters').optional() }).strict();
export const OUTBOX_DISCARD_SCHEMA = z.object({ reason: z.string({ error: 'reason is required (a string)' }).trim().min(1, 'reason is required').max(500, 'reason must be at most 500 characters') }, { error: 'the body must be {"reason": "..."}' }).strict();

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw new ValidationError(`invalid ${what}`, r.error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message })));
}

/** Who is acting: `X-Operator` if sent; the admin key itself names no one. */
function operator(req: FastifyRequest): string {
  const h = req.headers['x-operator'];
  return typeof h === 'string' && /^[\x20-\x7e]{1,100}$/.test(h) ? `admin:${h.trim()}` : 'admin';
}

/** The evidence, never the payload (it holds the recipient's address). */
function outboxView(o: OutboxRow) {
  return {
    id: o.id, jobId: o.job_id, kind: o.kind, state: o.state, attempts: o.attempts,
    ...(o.error_class ? { errorClass: o.error_class } : {}), ...(o.status_code ? { statusCode: o.status_code } : {}),
    ...(o.last_error ? { lastError: o.last_error } : {}), ...(o.failed_at ? { failedAt: o.failed_at.toISOString() } : {}),
    replays: o.replays, ...(o.resolved_by ? { resolvedBy: o.resolved_by, resolvedAt: o.resolved_at?.toISOString(), ...(o.resolution_reason ? { reason: o.resolution_reason } : {}) } : {}),
    createdAt: o.created_at.toISOString(), ...(o.delivered_at ? { deliveredAt: o.delivered_at.toISOString() } : {}),
  };
}

/**
 * Failed notifications: a notification the upstream refused for good (or that ran out of its
 * budget) ends `failed`, with evidence; an operator lists them, replays one (delivered again,
 * same effect key, so an upstream that did apply it answers with its first response) or
 * discards it. Only a `failed` row can be replayed or discarded (409 otherwise).
 */
export function registerOutboxRoutes(app: FastifyInstance, deps: OutboxRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);
  const notFailed = (reply: FastifyReply, o: OutboxRow) => sendProblem(reply, problem(409, 'outbox-not-failed', 'Conflict with the current state',
    `outbox row ${o.id} is ${o.state}; only a failed notification can be replayed or discarded`, { state: o.state } as never));

  app.get('/v1/admin/outbox', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parse(LIST_SCHEMA, req.query, 'query');
    const rows = await listOutbox(deps.pool, q.state ?? 'failed', q.limit ?? 100);
    return { items: rows.map((r) => ({ ...outboxView(r), tenantId: r.tenant_id })) };
  });

  app.get<{ Params: { id: string } }>('/v1/admin/outbox/:id', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const o = await getOutboxRow(deps.pool, req.params.id);
    if (!o) throw new NotFoundError(`outbox row ${req.params.id} not found`);
    return outboxView(o);
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/replay', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parse(OUTBOX_REPLAY_SCHEMA, req.body, 'replay request');
    const o = await getOutboxRow(deps.pool, req.params.id);
    if (!o) throw new NotFoundError(`outbox row ${req.params.id} not found`);
    const intent = await getIntent(deps.pool, o.job_id);
    if (!intent || !isJobType(intent.job_type)) throw new NotFoundError(`job ${o.job_id} of outbox row ${o.id} not found`);
    const replayed = await withTransaction(deps.pool, async (tx) => {
      const row = await resolveFailedOutbox(tx, o.id, 'replay', operator(req), reason ?? null);
      if (!row) return undefined;
      // The upstream refused it before: only this decision may call it again, with the same key.
      await reopenFailedEffect(tx, row.effect_key);
      await tx.query(`UPDATE job_intents SET notification_state = 'pending', updated_at = now() WHERE job_id = $1`, [row.job_id]);
      return row;
    });
    if (!replayed) return notFailed(reply, (await getOutboxRow(deps.pool, o.id))!);
    const args: StepArgs = { jobId: intent.job_id, tenantId: intent.tenant_id, jobType: intent.job_type, priority: intent.priority };
    const workflowId = `${intent.job_id}-outbox-replay-${replayed.replays}`;
    try {
      await deps.temporal.workflow.start('redeliverOutbox', { taskQueue: deps.taskQueue, workflowId, args: [args] });
    } catch (err) {
      // The row is pending again: the compensation scan delivers it if this start never happens.
      req.log.warn({ outboxId: o.id, jobId: o.job_id, err: (err as Error).message }, 'outbox replay: start failed; the scan will deliver it');
      throw new UnavailableError('Temporal cannot take the replay right now; the row is pending and the compensation scan will deliver it', 30, { cause: err });
    }
    req.log.info({ outboxId: o.id, jobId: o.job_id, workflowId }, 'failed notification replayed');
    return reply.code(202).send({ ...outboxView(replayed), workflowId });
  });

  app.post<{ Params: { id: string } }>('/v1/admin/outbox/:id/discard', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parse(OUTBOX_DISCARD_SCHEMA, req.body, 'discard request');
    const o = await getOutboxRow(deps.pool, req.params.id);
    if (!o) throw new NotFoundError(`outbox row ${req.params.id} not found`);
    const discarded = await resolveFailedOutbox(deps.pool, o.id, 'discard', operator(req), reason);
    if (!discarded) return notFailed(reply, (await getOutboxRow(deps.pool, o.id))!);
    req.log.info({ outboxId: o.id, jobId: o.job_id }, 'failed notification discarded');
    return outboxView(discarded);
  });
}
