/**
 * Failed notifications, the use case behind `/v1/admin/outbox*`: a notification the upstream
 * refused for good (or that ran out of its budget) ends `failed` with evidence; an operator
 * lists them, replays one (delivered again with the same effect key, so an upstream that did
 * apply it answers with its first response) or discards it. Only a `failed` row can be
 * replayed or discarded.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { z } from 'zod';
import type { StepArgs } from '../contract/job-types.js';
import type { JobRegistry } from '../job-api/registry.js';
import { withTransaction } from '../lib/db.js';
import { NotFoundError, StateConflictError, UnavailableError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { reopenFailedEffect } from '../store/effects.js';
import { getIntent, setNotificationState } from '../store/intents.js';
import { getOutboxRow, listOutbox, resolveFailedOutbox, type OutboxRow } from '../store/outbox.js';

const STATES = ['pending', 'delivered', 'failed', 'discarded'] as const;
export const OUTBOX_LIST_SCHEMA = z
  .object({
    state: z.enum(STATES, { error: 'state must be one of: pending, delivered, failed, discarded' }).optional(),
    limit: z.coerce
      .number({ error: 'limit must be a number' })
      .int('limit must be a whole number')
      .min(1, 'limit must be at least 1')
      .max(1_000, 'limit must be at most 1000')
      .optional(),
  })
  .strict();
export const OUTBOX_REPLAY_SCHEMA = z
  .object({
    reason: z
      .string({ error: 'reason must be a string' })
      .trim()
      .min(1, 'reason must not be empty')
      .max(500, 'reason must be at most 500 characters')
      .optional(),
  })
  .strict();
export const OUTBOX_DISCARD_SCHEMA = z
  .object(
    {
      reason: z
        .string({ error: 'reason is required (a string)' })
        .trim()
        .min(1, 'reason is required')
        .max(500, 'reason must be at most 500 characters'),
    },
    { error: 'the body must be {"reason": "..."}' },
  )
  .strict();

/** The evidence, never the payload (it holds the recipient's address). */
export function outboxView(o: OutboxRow) {
  return {
    id: o.id,
    jobId: o.job_id,
    kind: o.kind,
    state: o.state,
    attempts: o.attempts,
    ...(o.error_class ? { errorClass: o.error_class } : {}),
    ...(o.status_code ? { statusCode: o.status_code } : {}),
    ...(o.last_error ? { lastError: o.last_error } : {}),
    ...(o.failed_at ? { failedAt: o.failed_at.toISOString() } : {}),
    replays: o.replays,
    ...(o.resolved_by
      ? {
          resolvedBy: o.resolved_by,
          resolvedAt: o.resolved_at?.toISOString(),
          ...(o.resolution_reason ? { reason: o.resolution_reason } : {}),
        }
      : {}),
    createdAt: o.created_at.toISOString(),
    ...(o.delivered_at ? { deliveredAt: o.delivered_at.toISOString() } : {}),
  };
}

export interface OutboxServiceDeps {
  pool: pg.Pool;
  temporal: Client;
  taskQueue: string;
  jobTypes: Pick<JobRegistry, 'has'>;
  log: Logger;
}

export function createOutboxService(deps: OutboxServiceDeps) {
  const notFailed = (o: OutboxRow) =>
    new StateConflictError(`outbox row ${o.id} is ${o.state}; only a failed notification can be replayed or discarded`, {
      slug: 'outbox-not-failed',
      extra: { state: o.state },
    });

  async function row(id: string): Promise<OutboxRow> {
    const o = await getOutboxRow(deps.pool, id);
    if (!o) throw new NotFoundError(`outbox row ${id} not found`);
    return o;
  }

  async function list(q: z.infer<typeof OUTBOX_LIST_SCHEMA>) {
    const rows = await listOutbox(deps.pool, q.state ?? 'failed', q.limit ?? 100);
    return rows.map((r) => ({ ...outboxView(r), tenantId: r.tenant_id }));
  }

  async function replay(id: string, actor: string, reason: string | null) {
    const o = await row(id);
    const intent = await getIntent(deps.pool, o.job_id);
    if (!intent || !deps.jobTypes.has(intent.job_type)) throw new NotFoundError(`job ${o.job_id} of outbox row ${o.id} not found`);
    const replayed = await withTransaction(deps.pool, async (tx) => {
      const r = await resolveFailedOutbox(tx, o.id, 'replay', actor, reason);
      if (!r) return undefined;
      // The upstream refused it before: only this decision may call it again, with the same key.
      await reopenFailedEffect(tx, r.effect_key);
      await setNotificationState(tx, r.job_id, 'pending');
      return r;
    });
    if (!replayed) throw notFailed(await row(o.id));
    const args: StepArgs = { jobId: intent.job_id, tenantId: intent.tenant_id, jobType: intent.job_type, priority: intent.priority };
    const workflowId = `${intent.job_id}-outbox-replay-${replayed.replays}`;
    try {
      await deps.temporal.workflow.start('redeliverOutbox', { taskQueue: deps.taskQueue, workflowId, args: [args] });
    } catch (err) {
      // The row is pending again: the compensation scan delivers it if this start never happens.
      deps.log.warn(
        { outboxId: o.id, jobId: o.job_id, err: (err as Error).message },
        'outbox replay: start failed; the scan will deliver it',
      );
      throw new UnavailableError(
        'Temporal cannot take the replay right now; the row is pending and the compensation scan will deliver it',
        30,
        { dependency: 'temporal', cause: err },
      );
    }
    return { ...outboxView(replayed), workflowId };
  }

  async function discard(id: string, actor: string, reason: string) {
    const o = await row(id);
    const discarded = await resolveFailedOutbox(deps.pool, o.id, 'discard', actor, reason);
    if (!discarded) throw notFailed(await row(o.id));
    return outboxView(discarded);
  }

  /** One row's evidence, with its job's tenant (as `list` gives it). */
  async function show(id: string) {
    const o = await row(id);
    const intent = await getIntent(deps.pool, o.job_id);
    return { ...outboxView(o), tenantId: intent?.tenant_id ?? null };
  }

  return { list, show, replay, discard };
}

export type OutboxService = ReturnType<typeof createOutboxService>;
