import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { JobsClient } from '../services/intake.js';
import { RateLimitedError, ValidationError } from '../lib/errors.js';
import { zodFieldIssues } from '../lib/validation.js';
import { SUBMIT_BODY_SCHEMA } from '../services/intake.js';
import type { ListJobsFilter } from '../services/job-lists.js';
import { requireTenant } from './auth.js';
import type { AuthGuard } from './auth-throttle.js';
import { problemFromError, sendProblem } from './problems.js';

/** The intake over HTTP: a thin shell over the typed client library. */
export function registerJobRoutes(app: FastifyInstance, deps: { pool: pg.Pool; jobs: JobsClient; guard?: AuthGuard }) {
  app.post('/v1/jobs', async (req, reply) => {
    const tenantId = await requireTenant(deps.pool, req, reply, deps.guard);
    if (!tenantId) return reply;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length === 0) {
      return sendProblem(
        reply,
        problemFromError(
          new ValidationError('the Idempotency-Key header is required', [
            { path: 'Idempotency-Key', message: 'required; one key per business intent, 8-255 visible ASCII characters' },
          ]),
        ),
      );
    }
    const body = SUBMIT_BODY_SCHEMA.safeParse(req.body);
    if (!body.success) {
      const fields = zodFieldIssues(body.error);
      return sendProblem(
        reply,
        problemFromError(
          new ValidationError(
            'the body must be {"type": string, "input": object, "priority"?: "high"|"normal"|"low", "runAt"?: date-time, "delaySeconds"?: integer, "tags"?: object}',
            fields,
          ),
        ),
      );
    }
    const r = await deps.jobs
      .submitJob({
        tenantId,
        type: body.data.type,
        idempotencyKey: key,
        input: body.data.input,
        priority: body.data.priority,
        runAt: body.data.runAt,
        delaySeconds: body.data.delaySeconds,
        tags: body.data.tags,
      })
      .catch((err: unknown) => {
        // Which tenant hit its intake limit: here, since /metrics counts refusals without a tenant label.
        if (err instanceof RateLimitedError)
          req.log.warn({ tenantId, retryAfterSeconds: err.retryAfterSeconds }, 'submit refused: tenant over its intake rate limit');
        throw err;
      });
    const statusUrl = `/v1/jobs/${r.jobId}`;
    reply.header('Location', statusUrl);
    // A finished job's duplicate has nothing to poll for: no Retry-After (services/intake.ts).
    if (r.retryAfterSeconds !== undefined) reply.header('Retry-After', String(r.retryAfterSeconds));
    if (r.replayed) reply.header('Idempotent-Replayed', 'true');
    req.log.info(
      { jobId: r.jobId, tenantId, replayed: r.replayed, ...(r.scheduledFor ? { scheduledFor: r.scheduledFor } : {}) },
      r.replayed ? 'intent replayed' : 'job accepted',
    );
    return reply.code(r.replayed ? 200 : 202).send({
      jobId: r.jobId,
      status: r.status,
      statusUrl,
      ...(r.retryAfterSeconds !== undefined ? { retryAfterSeconds: r.retryAfterSeconds } : {}),
      ...(r.scheduledFor ? { scheduledFor: r.scheduledFor } : {}),
    });
  });

  // The tenant's own jobs, one page at a time (services/job-lists.ts); a bad filter is a 400 naming it.
  app.get('/v1/jobs', async (req, reply) => {
    const tenantId = await requireTenant(deps.pool, req, reply);
    if (!tenantId) return reply;
    return deps.jobs.listJobs(tenantId, (req.query ?? {}) as ListJobsFilter);
  });

  app.get<{ Params: { jobId: string }; Querystring: { allowStale?: unknown } }>('/v1/jobs/:jobId', async (req, reply) => {
    const tenantId = await requireTenant(deps.pool, req, reply, deps.guard);
    if (!tenantId) return reply;
    const allowStale = req.query.allowStale;
    if (allowStale !== undefined && allowStale !== 'true' && allowStale !== 'false') {
      return sendProblem(
        reply,
        problemFromError(
          new ValidationError('invalid allowStale', [
            {
              path: 'allowStale',
              message:
                'optional; "true" adds the last successful result of the same input, labelled stale, while this job has none; "false" (default) does not',
            },
          ]),
        ),
      );
    }
    return deps.jobs.getJob(tenantId, req.params.jobId, { allowStale: allowStale === 'true' });
  });

  app.post<{ Params: { jobId: string } }>('/v1/jobs/:jobId/cancel', async (req, reply) => {
    const tenantId = await requireTenant(deps.pool, req, reply, deps.guard);
    if (!tenantId) return reply;
    const status = await deps.jobs.cancelJob(tenantId, req.params.jobId);
    req.log.info({ jobId: status.jobId, tenantId }, 'cancellation requested');
    return reply.code(202).send({ jobId: status.jobId, status: status.status, cancelRequested: true });
  });
}
