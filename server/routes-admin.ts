import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { Counter, type Registry } from 'prom-client';
import { ValidationError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { zodFieldIssues } from '../lib/validation.js';
import { deferredByPriority, getSetting, recentAudit } from '../store/degradation.js';
import type { JobType } from '../contract/job-types.js';
import { changePause, changeSetting, degradationBody, liftedAny, nudgeDeferred, pauseBody, pausesOf } from '../services/degradation.js';
import { keyIdOf, operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access } from './roles.js';
import { collectQueueHealth } from '../services/queue-health.js';
import { registerHealthMetrics } from './metrics.js';
import { problemFromError, sendProblem, unavailableDependency } from './problems.js';

const UNKNOWN_DEGRADATION_FIELD =
  'unknown field; allowed: pausedPriorities, pausedScopes, recoveryRatePerMinute, fallbackJobTypes, rampStop, reason';
const UNKNOWN_PAUSE_FIELD = 'unknown field; allowed: priority, tenantId, jobType, reason';

export interface AdminDeps {
  pool: pg.Pool;
  temporal: Client;
  taskQueues: string[];
  /** Each job type's task queue (queue health names a type nobody polls). */
  jobTypeQueues?: Record<string, string>;
  adminApiKey: AdminKeys;
  log: Logger;
  fallbackTypes: readonly JobType[];
  /** See `AppDeps.metricsCacheMs`. Default 1000 ms. */
  metricsCacheMs?: number | undefined;
}

/** Admin endpoints for queue health and degradation, the health metrics, and the intake-rejection counter. */
export function registerAdminRoutes(app: FastifyInstance, registry: Registry, deps: AdminDeps): void {
  const metrics = registerHealthMetrics(registry, {
    pool: deps.pool,
    temporal: deps.temporal,
    taskQueues: deps.taskQueues,
    ...(deps.jobTypeQueues ? { jobTypeQueues: deps.jobTypeQueues } : {}),
    log: deps.log,
    fallbackTypes: deps.fallbackTypes,
    cacheMs: deps.metricsCacheMs,
  });
  const jobTypes = Object.keys(deps.jobTypeQueues ?? {});
  const body = degradationBody(deps.fallbackTypes, jobTypes);
  const pause = pauseBody(jobTypes);
  const nudge = () =>
    nudgeDeferred(deps).catch((e: Error) => deps.log.warn({ err: e.message }, 'could not nudge deferred jobs; they re-check on their own'));

  // Submits refused by a tenant's intake rate limit (issue 38 §5). No tenant label: /metrics is
  // public and carries no tenant, job or key (security review, item 50); which tenant was limited
  // is in the API's log line of the 429 and in the tenant's settings.
  const rateLimited = new Counter({
    name: 'durable_jobs_intake_rate_limited_total',
    help: 'Submits this process answered 429 because their tenant exceeded its intake rate limit (nothing was accepted). Per process: sum(rate()) across processes.',
    registers: [registry],
  });
  // Intake that could not persist: counted (durably, best-effort) so the health report shows it.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode === 429 && req.method === 'POST' && req.routeOptions.url === '/v1/jobs') rateLimited.inc();
    if (reply.statusCode === 503 && req.method === 'POST' && req.routeOptions.url === '/v1/jobs') {
      const dependency = unavailableDependency(req);
      metrics.countRejection(dependency === 'temporal' || dependency === 'postgres' ? dependency : 'other');
    }
    return payload;
  });

  app.get<{ Querystring: { history?: string } }>('/v1/admin/queue-health', access('viewer'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const raw = req.query.history ?? '30';
    if (!/^\d{1,3}$/.test(raw) || Number(raw) > 1440) {
      return sendProblem(
        reply,
        problemFromError(
          new ValidationError('invalid history', [
            { path: 'history', message: 'minutes of trend to include: a whole number 0-1440 (default 30)' },
          ]),
        ),
      );
    }
    return collectQueueHealth(deps, { historyMinutes: Number(raw) });
  });

  app.get('/v1/admin/degradation', access('viewer'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const [setting, deferred, audit] = [await getSetting(deps.pool), await deferredByPriority(deps.pool), await recentAudit(deps.pool, 20)];
    return { ...setting, deferredJobs: deferred, audit };
  });

  app.put('/v1/admin/degradation', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const actor = operatorOf(req);
    const parsed = body.safeParse(req.body);
    if (!parsed.success)
      throw new ValidationError('invalid degradation setting', zodFieldIssues(parsed.error, undefined, UNKNOWN_DEGRADATION_FIELD));
    const { before, after } = await changeSetting(deps.pool, parsed.data, { actor, keyId: keyIdOf(req), remoteAddr: req.ip ?? null });
    req.log.info(
      {
        actor,
        pausedPriorities: after.pausedPriorities,
        recoveryRatePerMinute: after.recoveryRatePerMinute,
        fallbackJobTypes: after.fallbackJobTypes,
      },
      'degradation setting changed',
    );
    if (liftedAny(before, after)) void nudge();
    return { ...after, deferredJobs: await deferredByPriority(deps.pool) };
  });

  // Pauses one at a time (issue 38 §4): a priority, a job type, a tenant, or a tenant's type.
  // The same setting as PUT /v1/admin/degradation, changed under its lock and audited alike.
  app.get('/v1/admin/pauses', access('viewer'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    return { ...pausesOf(await getSetting(deps.pool)), deferredJobs: await deferredByPriority(deps.pool) };
  });

  for (const op of ['pause', 'resume'] as const) {
    // Pausing is an operator's action (server/roles.ts); it spans every tenant, so a scoped key is refused.
    app.post(op === 'pause' ? '/v1/admin/pauses' : '/v1/admin/pauses/resume', access('operator'), async (req, reply) => {
      if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
      const actor = operatorOf(req);
      const parsed = pause.safeParse(req.body ?? {});
      if (!parsed.success) throw new ValidationError(`invalid ${op}`, zodFieldIssues(parsed.error, undefined, UNKNOWN_PAUSE_FIELD));
      const { before, after } = await changePause(deps.pool, op, parsed.data, { actor, keyId: keyIdOf(req), remoteAddr: req.ip ?? null });
      const { reason: _reason, ...target } = parsed.data;
      req.log.info({ actor, ...target }, op === 'pause' ? 'paused' : 'resumed');
      if (liftedAny(before, after)) void nudge();
      return { ...pausesOf(after), deferredJobs: await deferredByPriority(deps.pool) };
    });
  }
}
