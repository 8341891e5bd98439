import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { z } from 'zod';
import { previewReplay } from '../activities/dead-letters.js';
import { withTransaction } from '../lib/db.js';
import { NotFoundError, UnavailableError, ValidationError } from '../lib/errors.js';
import {
  actionsFor, DEAD_LETTER_STATES, getDeadLetter, insertAction, listDeadLetters, lockDeadLetter, markDiscarded,
  replayJobsOf, type DeadLetterFilter, type DeadLetterRow,
} from '../store/dead-letters.js';
import {
  replayAddSignal, replayPauseSignal, replayProgressQuery, replayResumeSignal, replayStopSignal,
} from '../contract/messages.js';
import type { replayDeadLetters } from '../workflows/replay.js';
import { requireAdmin } from './auth.js';
import { problem, sendProblem } from './problems.js';
import type { JobRegistry } from '../job-api/registry.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../lib/db.js';

export interface DeadLetterRouteDeps {
  pool: pg.Pool;
  temporal: Client;
  jobTypes: JobRegistry;
  adminApiKey: string | undefined;
  /** The jobs task queue: replay workflows and their replay jobs run there. */
  taskQueue: string;
  /** Compared with each dead letter's recorded version in dry runs. */
  codeVersion: string;
}

/** The API's view of a dead letter: evidence only, never input. Times are ISO 8601 UTC. */
export function deadLetterView(d: DeadLetterRow) {
  return {
    id: d.id, jobId: d.job_id, runId: d.run_id, tenantId: d.tenant_id, jobType: d.job_type, state: d.state,
    errorClass: d.error_class, errorType: d.error_type, statusCode: d.status_code, retryState: d.retry_state,
    failedStep: d.failed_step, message: d.message, attempts: d.attempts, codeVersion: d.code_version, buildId: d.build_id,
    inputHash: d.input_hash, inputRef: d.input_ref, providerRequestIds: d.provider_request_ids,
    firstFailureAt: d.first_failure_at.toISOString(), lastFailureAt: d.last_failure_at.toISOString(),
    ...(d.discard_reason ? { discardReason: d.discard_reason } : {}),
    replayCount: d.replay_count, ...(d.replay_id ? { replayId: d.replay_id, replayJobId: d.replay_job_id } : {}),
    createdAt: d.created_at.toISOString(), updatedAt: d.updated_at.toISOString(),
  };
}

const shortText = z.string().min(1).max(200);
const FILTER_SCHEMA = z.object({
  state: z.literal('open', { error: 'a replay filter only selects open dead letters' }).optional(),
  jobType: shortText.optional(), tenantId: shortText.optional(), errorClass: shortText.optional(),
  statusCode: z.number().int().min(100).max(599).optional(),
  since: z.iso.datetime({ offset: true }).optional(), until: z.iso.datetime({ offset: true }).optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
}).strict();
export const REPLAY_SCHEMA = z.object({
  ids: z.array(shortText).min(1).max(10_000).optional(),
  filter: FILTER_SCHEMA.optional(),
  dryRun: z.boolean().optional(),
  batchSize: z.number().int().min(1).max(100).optional(),
  concurrency: z.number().int().min(1).max(50).optional(),
  ratePerMinute: z.number().int().min(1).max(6_000).optional(),
  maxFailures: z.number().int().min(0).max(100_000).optional(),
  keepOpenSeconds: z.number().int().min(0).max(3_600).optional(),
}).strict().refine((b) => (b.ids === undefined) !== (b.filter === undefined), { message: 'send exactly one of "ids" or "filter"', path: ['ids'] });
const LIST_SCHEMA = z.object({
  state: z.enum(DEAD_LETTER_STATES as [string, ...string[]]).optional(),
  jobType: shortText.optional(), tenantId: shortText.optional(), errorClass: shortText.optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(100), offset: z.coerce.number().int().min(0).default(0),
}).strict();
export const DISCARD_SCHEMA = z.object({ reason: z.string().trim().min(1, 'reason is required').max(500) }).strict();
const ADD_SCHEMA = z.object({ ids: z.array(shortText).min(1).max(10_000) }).strict();
const STOP_SCHEMA = z.object({ reason: z.string().max(500).optional() }).strict();
const REPLAY_ID = /^replay-[0-9a-f-]{36}$/;

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw new ValidationError(`invalid ${what}`, r.error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message })));
}

/** Who is acting: `X-Operator` (the CLI sends the login name); the admin key itself names no one. */
function operator(req: FastifyRequest): string {
  const h = req.headers['x-operator'];
  return typeof h === 'string' && /^[\x20-\x7e]{1,100}$/.test(h) ? `admin:${h.trim()}` : 'admin';
}

/** Explicit IDs must all be open: a discarded (or busy) dead letter is refused, never skipped silently. */
async function resolveTargets(pool: pg.Pool, reply: FastifyReply, body: { ids?: string[]; filter?: z.infer<typeof FILTER_SCHEMA> }): Promise<DeadLetterRow[] | undefined> {
  if (body.filter) {
    const { limit, state: _open, ...f } = body.filter;
    return listDeadLetters(pool, { ...f, state: 'open', limit: limit ?? 1_000 } satisfies DeadLetterFilter);
  }
  const ids = [...new Set(body.ids!)];
  const rows = await listDeadLetters(pool, { ids, limit: ids.length });
  const missing = ids.filter((id) => !rows.some((r) => r.id === id));
  if (missing.length > 0) {
    sendProblem(reply, problem(404, 'not-found', 'Not found', `no dead letter ${missing.slice(0, 10).join(', ')}`));
    return undefined;
  }
  const discarded = rows.filter((r) => r.state === 'discarded');
  if (discarded.length > 0) {
    sendProblem(reply, problem(409, 'dead-letter-discarded', 'Dead letter discarded', `discarded dead letters are never replayed: ${discarded.map((r) => r.id).join(', ')}`, { ids: discarded.map((r) => r.id) }));
    return undefined;
  }
  const busy = rows.filter((r) => r.state !== 'open');
  if (busy.length > 0) {
    sendProblem(reply, problem(409, 'dead-letter-not-open', 'Dead letter not open', `only open dead letters can be replayed: ${busy.map((r) => `${r.id} is ${r.state}`).join(', ')}`, { ids: busy.map((r) => r.id) }));
    return undefined;
  }
  return ids.map((id) => rows.find((r) => r.id === id)!);
}

export function registerDeadLetterRoutes(app: FastifyInstance, deps: DeadLetterRouteDeps): void {
  const admin = (req: FastifyRequest, reply: FastifyReply) => requireAdmin(deps.adminApiKey, req, reply);

  app.get('/v1/dead-letters', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const q = parse(LIST_SCHEMA, req.query, 'query');
    const rows = await listDeadLetters(deps.pool, q as DeadLetterFilter);
    return { deadLetters: rows.map(deadLetterView), limit: q.limit, offset: q.offset };
  });

  app.get<{ Params: { id: string } }>('/v1/dead-letters/:id', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const d = await getDeadLetter(deps.pool, req.params.id);
    if (!d) throw new NotFoundError(`dead letter ${req.params.id} not found`);
    const [actions, replays] = await Promise.all([actionsFor(deps.pool, d.id), replayJobsOf(deps.pool, d.job_id)]);
    return {
      ...deadLetterView(d),
      actions: actions.map((a) => ({ action: a.action, actor: a.actor, at: a.at.toISOString(), details: a.details })),
      replays: replays.map((r) => ({ jobId: r.job_id, status: r.status, createdAt: r.created_at.toISOString(), finishedAt: r.finished_at?.toISOString() ?? null })),
    };
  });

  app.post('/v1/dead-letters/replay', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const body = parse(REPLAY_SCHEMA, req.body, 'replay request');
    const targets = await resolveTargets(deps.pool, reply, body);
    if (!targets) return reply;
    if (body.dryRun) {
      const previews = [];
      for (const t of targets) previews.push(await previewReplay(deps.pool, deps.jobTypes, t.id, deps.codeVersion));
      return reply.code(200).send({ dryRun: true, count: previews.length, deadLetters: previews });
    }
    if (targets.length === 0) return sendProblem(reply, problem(422, 'nothing-to-replay', 'Nothing to replay', 'no open dead letter matches the filter'));
    const replayId = `replay-${randomUUID()}`;
    const actor = operator(req);
    const { ids: _ids, filter: _filter, dryRun: _dry, ...options } = body;
    // Actions and the start commit together: a failed start leaves no "requested" trail.
    await withTransaction(deps.pool, async (tx) => {
      for (const t of targets) await insertAction(tx, { deadLetterId: t.id, action: 'replay_requested', actor, details: { replayId, ...options } });
      try {
        await deps.temporal.workflow.start<typeof replayDeadLetters>('replayDeadLetters', {
          taskQueue: deps.taskQueue, workflowId: replayId,
          args: [{ replayId, requestedBy: actor, deadLetterIds: targets.map((t) => t.id), ...options }],
          staticSummary: `replay of ${targets.length} dead letter(s), requested by ${actor}`,
        });
      } catch (err) {
        throw new UnavailableError('Temporal cannot start the replay right now', UNAVAILABLE_RETRY_AFTER_SECONDS, { dependency: 'temporal', cause: err });
      }
    });
    req.log.info({ replayId, count: targets.length, actor }, 'replay requested');
    const statusUrl = `/v1/dead-letters/replays/${replayId}`;
    return reply.code(202).header('Location', statusUrl).send({ replayId, count: targets.length, statusUrl });
  });

  app.get<{ Params: { replayId: string } }>('/v1/dead-letters/replays/:replayId', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    if (!REPLAY_ID.test(req.params.replayId)) throw new NotFoundError(`replay ${req.params.replayId} not found`);
    const handle = deps.temporal.workflow.getHandle(req.params.replayId);
    try {
      return await handle.query(replayProgressQuery);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new NotFoundError(`replay ${req.params.replayId} not found`);
      const d = await handle.describe().catch(() => undefined);
      if (d?.status.name === 'COMPLETED') return handle.result();
      throw new UnavailableError('cannot read the replay progress right now', UNAVAILABLE_RETRY_AFTER_SECONDS, { dependency: 'temporal', cause: err });
    }
  });

  app.post<{ Params: { replayId: string; command: string } }>('/v1/dead-letters/replays/:replayId/:command', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { replayId, command } = req.params;
    if (!REPLAY_ID.test(replayId) || !['pause', 'resume', 'stop', 'add'].includes(command)) throw new NotFoundError(`no route POST ${req.url}`);
    const handle = deps.temporal.workflow.getHandle(replayId);
    const actor = operator(req);
    try {
      if (command === 'pause') await handle.signal(replayPauseSignal);
      else if (command === 'resume') await handle.signal(replayResumeSignal);
      else if (command === 'stop') await handle.signal(replayStopSignal, { reason: parse(STOP_SCHEMA, req.body, 'stop request').reason, by: actor });
      else {
        const targets = await resolveTargets(deps.pool, reply, parse(ADD_SCHEMA, req.body, 'add request'));
        if (!targets) return reply;
        await withTransaction(deps.pool, async (tx) => {
          for (const t of targets) await insertAction(tx, { deadLetterId: t.id, action: 'replay_requested', actor, details: { replayId } });
          await handle.signal(replayAddSignal, { ids: targets.map((t) => t.id) });
        });
      }
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        return sendProblem(reply, problem(409, 'replay-finished', 'Replay finished', `replay ${replayId} is not running (finished or unknown)`));
      }
      throw err;
    }
    req.log.info({ replayId, command, actor }, 'replay signalled');
    return reply.code(202).send({ replayId, command, accepted: true });
  });

  app.post<{ Params: { id: string } }>('/v1/dead-letters/:id/discard', async (req, reply) => {
    if (!admin(req, reply)) return reply;
    const { reason } = parse(DISCARD_SCHEMA, req.body, 'discard request');
    const actor = operator(req);
    const outcome = await withTransaction(deps.pool, async (tx) => {
      const d = await lockDeadLetter(tx, req.params.id);
      if (!d) throw new NotFoundError(`dead letter ${req.params.id} not found`);
      if (d.state !== 'open') return d.state;
      await markDiscarded(tx, d.id, reason);
      await insertAction(tx, { deadLetterId: d.id, action: 'discarded', actor, details: { reason } });
      return 'discarded-now' as const;
    });
    if (outcome === 'replaying' || outcome === 'replayed') {
      return sendProblem(reply, problem(409, `dead-letter-${outcome}`, 'Conflict with the current state', `dead letter ${req.params.id} is ${outcome}; only an open dead letter can be discarded`));
    }
    if (outcome === 'discarded-now') req.log.info({ deadLetterId: req.params.id, actor }, 'dead letter discarded');
    // Discarding twice is harmless: the first reason and action stay.
    return deadLetterView((await getDeadLetter(deps.pool, req.params.id))!);
  });
}
