import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { withTransaction } from '../lib/db.js';
import { ValidationError, type FieldIssue } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import {
  deferredByPriority, getSetting, insertAudit, lockSetting, recentAudit, writeSetting, type DegradationSetting,
} from '../store/degradation.js';
import { PRIORITIES, type JobType, type Priority } from '../contract/job-types.js';
import { requireAdmin } from './auth.js';
import { collectQueueHealth, registerHealthMetrics } from './metrics.js';
import { problemFromError, sendProblem, unavailableDependency } from './problems.js';

export interface AdminDeps { pool: pg.Pool; temporal: Client; taskQueues: string[]; adminApiKey: string | undefined; log: Logger; fallbackTypes: readonly JobType[] }

/** The body of `PUT /v1/admin/degradation` (also the OpenAPI schema), for the registered types that declare a fallback. */
export function degradationBody(fallbackTypes: readonly JobType[]) {
  const fallbackTypesMessage = fallbackTypes.length > 0
    ? `each entry must be a job type that declares a fallback upstream: ${fallbackTypes.join(', ')}`
    : 'no job type declares a fallback upstream';
  return z.object({
  pausedPriorities: z.array(z.enum(PRIORITIES, { error: 'each entry must be one of: high, normal, low' }), { error: 'must be an array of priorities (high, normal, low); [] pauses nothing' })
    .refine((a) => new Set(a).size === a.length, 'must not name a priority twice'),
  recoveryRatePerMinute: z.number({ error: 'must be a number of jobs per minute' })
    .int('must be a whole number of jobs per minute').min(1, 'must be at least 1 job per minute').max(10_000, 'must be at most 10000 jobs per minute')
    .optional(),
  reason: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters').optional(),
  // Omitted: unchanged. [] switches every type back to the primary for new effects.
  fallbackJobTypes: z.array(z.enum(fallbackTypes as [string, ...string[]], { error: fallbackTypesMessage }), { error: 'must be an array of job types; [] uses the primary upstream for all' })
    .refine((a) => new Set(a).size === a.length, 'must not name a job type twice')
    .optional()
    .describe('job types whose new effects go to the fallback upstream (PROVIDER_FALLBACK_URL); omitted: unchanged'),
}, { error: 'the body must be a JSON object {"pausedPriorities": [...], "recoveryRatePerMinute"?: number, "fallbackJobTypes"?: [...], "reason"?: string}' }).strict();
}

type DegradationBody = z.infer<ReturnType<typeof degradationBody>>;

/** Who changed the setting: the `X-Operator` header (a name, for the audit), else "admin". */
const OPERATOR = /^[\x21-\x7e][\x20-\x7e]{0,99}$/;

function issuesOf(err: z.ZodError): FieldIssue[] {
  return err.issues.flatMap((i) => {
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: k, message: 'unknown field; allowed: pausedPriorities, recoveryRatePerMinute, fallbackJobTypes, reason' }));
    return [{ path: i.path.map(String).join('.') || '(body)', message: i.message }];
  });
}

const keyId = (req: FastifyRequest) => {
  const key = /^Bearer\s+(\S+)/i.exec(String(req.headers.authorization ?? ''))?.[1] ?? '';
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
};

/** Applies a validated change in one transaction: the locked row, the new row, and its audit entry. */
async function changeSetting(pool: pg.Pool, body: DegradationBody, audit: { actor: string; keyId: string; remoteAddr: string | null }): Promise<{ before: DegradationSetting; after: DegradationSetting }> {
  return withTransaction(pool, async (tx) => {
    const cur = await lockSetting(tx);
    const { now, ...before } = cur;
    // A priority that stays paused keeps its original "since"; a newly paused one starts now.
    const pausedSince: Partial<Record<Priority, string>> = {};
    for (const p of body.pausedPriorities) pausedSince[p] = before.pausedSince[p] ?? now.toISOString();
    // Likewise a type that stays on the fallback keeps when and by whom it was switched.
    const fallbackJobTypes = body.fallbackJobTypes ? [...body.fallbackJobTypes].sort() : before.fallbackJobTypes;
    const fallbackSince = Object.fromEntries(fallbackJobTypes.map((t) => [t, before.fallbackSince[t] ?? { at: now.toISOString(), by: audit.actor }]));
    const after = await writeSetting(tx, {
      pausedPriorities: PRIORITIES.filter((p) => body.pausedPriorities.includes(p)), pausedSince,
      recoveryRatePerMinute: body.recoveryRatePerMinute ?? before.recoveryRatePerMinute, updatedBy: audit.actor,
      fallbackJobTypes, fallbackSince,
    });
    await insertAudit(tx, { ...audit, reason: body.reason ?? null, before, after });
    return { before, after };
  });
}

/**
 * Wakes deferred jobs so they re-check now instead of at their next poll. Best-effort (the
 * poll is the guarantee): visibility is eventually consistent and a signal may miss a job.
 */
async function nudgeDeferred(deps: AdminDeps): Promise<number> {
  let n = 0;
  for (const tq of deps.taskQueues) {
    const query = `JobState = 'deferred' AND ExecutionStatus = 'Running' AND TaskQueue = '${tq.replace(/'/g, '')}'`;
    const batch: Promise<unknown>[] = [];
    for await (const wf of deps.temporal.workflow.list({ query })) {
      batch.push(deps.temporal.workflow.getHandle(wf.workflowId, wf.runId).signal('degradationChanged').catch(() => undefined));
      n++;
      if (batch.length >= 20) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
  }
  return n;
}

/** Admin endpoints for queue health and degradation, the health metrics, and the intake-rejection counter. */
export function registerAdminRoutes(app: FastifyInstance, registry: Registry, deps: AdminDeps): void {
  const metrics = registerHealthMetrics(registry, { pool: deps.pool, temporal: deps.temporal, taskQueues: deps.taskQueues, log: deps.log, fallbackTypes: deps.fallbackTypes });
  const body = degradationBody(deps.fallbackTypes);

  // Intake that could not persist: counted (durably, best-effort) so the health report shows it.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode === 503 && req.method === 'POST' && req.routeOptions.url === '/v1/jobs') {
      const dependency = unavailableDependency(req);
      metrics.countRejection(dependency === 'temporal' || dependency === 'postgres' ? dependency : 'other');
    }
    return payload;
  });

  app.get<{ Querystring: { history?: string } }>('/v1/admin/queue-health', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const raw = req.query.history ?? '30';
    if (!/^\d{1,3}$/.test(raw) || Number(raw) > 1440) {
      return sendProblem(reply, problemFromError(new ValidationError('invalid history', [{ path: 'history', message: 'minutes of trend to include: a whole number 0-1440 (default 30)' }])));
    }
    return collectQueueHealth(deps, { historyMinutes: Number(raw) });
  });

  app.get('/v1/admin/degradation', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const [setting, deferred, audit] = [await getSetting(deps.pool), await deferredByPriority(deps.pool), await recentAudit(deps.pool, 20)];
    return { ...setting, deferredJobs: deferred, audit };
  });

  app.put('/v1/admin/degradation', async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const operator = req.headers['x-operator'];
    if (operator !== undefined && (typeof operator !== 'string' || !OPERATOR.test(operator))) {
      return sendProblem(reply, problemFromError(new ValidationError('invalid X-Operator header', [{ path: 'X-Operator', message: 'optional; your name for the audit trail, 1-100 printable ASCII characters' }])));
    }
    const parsed = body.safeParse(req.body);
    if (!parsed.success) return sendProblem(reply, problemFromError(new ValidationError('invalid degradation setting', issuesOf(parsed.error))));
    const actor = typeof operator === 'string' ? operator : 'admin';
    const { before, after } = await changeSetting(deps.pool, parsed.data, { actor, keyId: keyId(req), remoteAddr: req.ip ?? null });
    req.log.info({ actor, pausedPriorities: after.pausedPriorities, recoveryRatePerMinute: after.recoveryRatePerMinute, fallbackJobTypes: after.fallbackJobTypes }, 'degradation setting changed');
    const lifted = before.pausedPriorities.some((p) => !after.pausedPriorities.includes(p)) || before.recoveryRatePerMinute !== after.recoveryRatePerMinute;
    if (lifted) nudgeDeferred(deps).catch((e: Error) => deps.log.warn({ err: e.message }, 'could not nudge deferred jobs; they re-check on their own'));
    return { ...after, deferredJobs: await deferredByPriority(deps.pool) };
  });
}
