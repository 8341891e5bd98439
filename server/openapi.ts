import { z } from 'zod';
import type { JobRegistry } from '../job-api/registry.js';
import { SUBMIT_BODY_SCHEMA } from '../services/intake.js';
import { degradationBody } from '../services/degradation.js';
import { DISCARD_SCHEMA, REPLAY_SCHEMA } from '../services/dead-letters.js';
import { OUTBOX_DISCARD_SCHEMA, OUTBOX_REPLAY_SCHEMA } from '../services/outbox.js';
import { tenantPaths } from './openapi-tenants.js';
import { opsPaths } from './openapi-ops.js';
import { sessionPaths } from './openapi-session.js';
import { pausePaths } from './openapi-pauses.js';
import { bulkPaths } from './openapi-bulk.js';
import { consoleOpsPaths } from './openapi-console-ops.js';
import { listParameters } from './openapi-lists.js';
import { jobStatusSchema } from './openapi-job-status.js';

/**
 * The OpenAPI document, generated from the same zod schemas that validate requests, so the
 * two cannot drift.
 */
export function openApiDocument(version: string, jobs: JobRegistry): Record<string, unknown> {
  const json = (s: z.ZodType) => z.toJSONSchema(s, { target: 'openapi-3.0' });
  const problem = { $ref: '#/components/schemas/Problem' };
  const problemResponse = (description: string) => ({ description, content: { 'application/problem+json': { schema: problem } } });
  const degradation = json(degradationBody(jobs.fallbackTypes, jobs.names));
  // One schema per registered type, described by its definition (and its effect steps).
  const inputs = Object.fromEntries(
    jobs.modules.map(({ definition: d }) => [
      `${d.name}Input`,
      {
        ...json(d.input),
        description: `${d.description}. Effect steps: ${d.effects.join(', ')}${d.submittable ? '' : '. Not submittable'}`,
      },
    ]),
  );
  return {
    openapi: '3.0.3',
    info: {
      title: 'durable-jobs',
      version,
      description: 'Background jobs on Temporal and PostgreSQL: durable intake, effects once, every state visible.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ...inputs,
        SubmitJob: {
          ...json(SUBMIT_BODY_SCHEMA),
          description: `input must match the schema of its type: ${jobs.names.map((k) => `${k}Input`).join(', ')}`,
        },
        Accepted: {
          type: 'object',
          properties: {
            jobId: { type: 'string' },
            status: { type: 'string' },
            statusUrl: { type: 'string' },
            retryAfterSeconds: {
              type: 'integer',
              description:
                'when to poll statusUrl (a scheduled job: the seconds until its time); absent (with no Retry-After header) for a duplicate of a finished job',
            },
            scheduledFor: { type: 'string', format: 'date-time', description: 'a delayed job: when it may start (UTC)' },
          },
        },
        JobPage: {
          type: 'object',
          required: ['jobs', 'limit'],
          properties: {
            jobs: { type: 'array', items: { $ref: '#/components/schemas/JobStatus' } },
            nextCursor: { type: 'string', description: 'pass as cursor, with the same filter, for the next page; absent on the last page' },
            limit: { type: 'integer' },
          },
        },
        JobStatus: jobStatusSchema(),
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/jobs': {
        post: {
          summary: 'Submit a job (one business intent per Idempotency-Key)',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: true,
              schema: { type: 'string', minLength: 8, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/SubmitJob' } } } },
          responses: {
            202: {
              description: 'accepted: a new durable job',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } },
            },
            200: {
              description: 'the same intent again: the same job (Idempotent-Replayed: true)',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } },
            },
            400: problemResponse(
              'missing or malformed key, unknown type, invalid input, malformed JSON; runAt and delaySeconds together, a negative delay or one over 365 days; bad tags',
            ),
            401: problemResponse('missing or wrong API key'),
            413: problemResponse('body over 256 KiB'),
            415: problemResponse('not application/json'),
            422: problemResponse('key reused with a different type, input, runAt, delaySeconds or tags'),
            429: problemResponse("over the tenant's intake rate limit (nothing accepted); retry after Retry-After"),
            503: problemResponse('Temporal or Postgres cannot take the job; retry with the same key after Retry-After'),
          },
        },
        get: {
          summary: "The tenant's own jobs, newest first, one keyset page at a time (never the input; another tenant's jobs never appear)",
          parameters: listParameters(),
          responses: {
            200: { description: 'one page', content: { 'application/json': { schema: { $ref: '#/components/schemas/JobPage' } } } },
            400: problemResponse('a bad filter, an unknown parameter, or a cursor of another list (the problem names the parameter)'),
            401: problemResponse('missing or wrong API key'),
          },
        },
      },
      '/v1/jobs/{jobId}': {
        get: {
          summary: "A job's status",
          parameters: [
            { name: 'jobId', in: 'path', required: true, schema: { type: 'string' } },
            {
              name: 'allowStale',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['true', 'false'], default: 'false' },
              description:
                'true: while the job has no result (queued, running, retrying, deferred) and its type allows it, add staleResult: the last successful result of the same tenant, type and input, labelled with its time',
            },
          ],
          responses: {
            200: { description: 'status', content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } } },
            400: problemResponse('allowStale is not true or false'),
            404: problemResponse('no such job for this tenant'),
          },
        },
      },
      '/v1/jobs/{jobId}/cancel': {
        post: {
          summary: 'Cancel a job that has not finished',
          parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            202: { description: 'cancellation requested' },
            404: problemResponse('no such job'),
            409: problemResponse('already finished'),
          },
        },
      },
      '/v1/webhooks/{source}': {
        post: {
          summary: 'Receive a provider webhook (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature over the raw body)',
          security: [],
          parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature']
            .map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } }))
            .concat([{ name: 'source', in: 'path', required: true, schema: { type: 'string' } }]),
          responses: {
            202: {
              description:
                "new delivery, recorded once and routed by the subscribed job type's webhook.route: outcome started (with jobId), signalled, pending_signal (durable, its job not yet signalled; the compensation scan signals it), unmatched or ignored",
            },
            200: { description: 'the same webhook-id again: nothing changes' },
            400: problemResponse('valid signature, malformed JSON or event (also nested deeper than 64 levels)'),
            401: problemResponse('bad or missing signature, or timestamp outside 5 minutes'),
            403: problemResponse("refused and recorded: a source bound to a tenant addressed another tenant's job (docs/triggers.md)"),
            404: problemResponse('unknown source'),
          },
        },
      },
      '/v1/admin/webhook-deliveries/{source}/{webhookId}': {
        get: {
          summary: 'A delivery: first seen, times received, outcome (admin key)',
          responses: { 200: { description: 'delivery' }, 404: problemResponse('unknown delivery') },
        },
      },
      '/v1/dead-letters': {
        get: {
          summary: 'Dead letters (admin key)',
          parameters: [{ name: 'state', in: 'query', schema: { type: 'string', enum: ['open', 'replaying', 'replayed', 'discarded'] } }],
          responses: { 200: { description: 'list' }, 401: problemResponse('admin key required') },
        },
      },
      '/v1/dead-letters/{id}': {
        get: {
          summary: 'Evidence and action history of one dead letter (admin key)',
          responses: { 200: { description: 'dead letter' }, 404: problemResponse('unknown') },
        },
      },
      '/v1/dead-letters/replay': {
        post: {
          summary: 'Replay dead letters (dry run first), in batches with bounded concurrency and rate (admin key)',
          requestBody: { required: true, content: { 'application/json': { schema: json(REPLAY_SCHEMA) } } },
          responses: {
            200: { description: 'dry run: per dead letter, each effect reuse or execute' },
            202: {
              description:
                '{"replayId","count","statusUrl","skipped"?,"takenOver"?}: re-sent after a closed request, already replayed dead letters are skipped and those it left replaying are taken over',
            },
            400: problemResponse('invalid request'),
            409: problemResponse('a discarded dead letter, or nothing left to replay'),
          },
        },
      },
      '/v1/dead-letters/replays/{replayId}': {
        get: {
          summary: 'Progress of a replay (admin key)',
          responses: { 200: { description: 'progress' }, 404: problemResponse('unknown replay') },
        },
      },
      '/v1/dead-letters/{id}/discard': {
        post: {
          summary: 'Discard with a reason; never replayed afterwards (admin key)',
          requestBody: { required: true, content: { 'application/json': { schema: json(DISCARD_SCHEMA) } } },
          responses: { 200: { description: 'discarded' }, 400: problemResponse('reason missing'), 404: problemResponse('unknown') },
        },
      },
      '/v1/admin/outbox': {
        get: {
          summary:
            'Failed (or other) notifications with their evidence, never the payload (admin key; ?state=failed|pending|delivered|discarded, ?limit=1..1000)',
          responses: { 200: { description: 'outbox rows' }, 400: problemResponse('bad query') },
        },
      },
      '/v1/admin/outbox/{id}': {
        get: { summary: 'One outbox row (admin key)', responses: { 200: { description: 'outbox row' }, 404: problemResponse('unknown') } },
      },
      '/v1/admin/outbox/{id}/replay': {
        post: {
          summary: 'Deliver a failed notification again, with its own effect key (admin key)',
          requestBody: { required: false, content: { 'application/json': { schema: json(OUTBOX_REPLAY_SCHEMA) } } },
          responses: {
            202: { description: 'pending again; delivery started' },
            404: problemResponse('unknown'),
            409: problemResponse('not failed'),
            503: problemResponse('Temporal unavailable; the scan delivers it'),
          },
        },
      },
      '/v1/admin/outbox/{id}/discard': {
        post: {
          summary: 'Discard a failed notification with a reason; never delivered (admin key)',
          requestBody: { required: true, content: { 'application/json': { schema: json(OUTBOX_DISCARD_SCHEMA) } } },
          responses: {
            200: { description: 'discarded' },
            400: problemResponse('reason missing'),
            404: problemResponse('unknown'),
            409: problemResponse('not failed'),
          },
        },
      },
      '/v1/admin/whoami': {
        get: {
          summary:
            'The operator this admin key (or console session) names (every audit row carries that name), its role (viewer, operator, admin), the tenants it is scoped to (null: all), its key ID (a hash prefix) and the Temporal Web UI to link to (any role)',
          responses: {
            200: { description: '{"operator","keyId","role","tenants","may","via","temporalUi"}' },
            401: problemResponse('not an admin key'),
          },
        },
      },
      '/v1/admin/jobs': {
        get: {
          summary:
            'Find jobs across tenants by job ID, tenant, type, state, creation time or tag, newest first, one keyset page at a time; never the input (admin key)',
          parameters: [
            { name: 'jobId', in: 'query', schema: { type: 'string', maxLength: 300 } },
            { name: 'tenantId', in: 'query', schema: { type: 'string', maxLength: 300 } },
            ...listParameters(),
          ],
          responses: {
            200: { description: '{"jobs": [job status + tenantId], "nextCursor"?, "limit"}' },
            400: problemResponse('invalid filter'),
            401: problemResponse('admin key required'),
          },
        },
      },
      '/v1/admin/jobs/{jobId}': {
        get: {
          summary: 'One job as its tenant sees it, plus the tenant (admin key)',
          responses: { 200: { description: 'job' }, 401: problemResponse('admin key required'), 404: problemResponse('unknown job') },
        },
      },
      '/v1/admin/jobs/{jobId}/timeline': {
        get: {
          summary:
            "One job's timeline (admin key): every event from Postgres and the Temporal history in UTC order, each with its source and kind; above it the stage verdict (intake, claim, side effects, completion) in words with its figure, the next step, queue wait and execution time per stage, duplicates and replay lineage, and the job's trace ID (`trace`, linked when TRACE_UI_URL is set). Never the input, a result, a payload or a key",
          parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string', maxLength: 300 } }],
          responses: {
            200: { description: 'timeline' },
            400: problemResponse('invalid job ID or an unknown query parameter'),
            401: problemResponse('admin key required'),
            404: problemResponse('unknown job'),
          },
        },
      },
      '/v1/admin/queue-health': {
        get: {
          summary:
            'Queue health: backlog and its age, rates, recovery ETA, leases, dead letters, outbox, degradation, fallback use (admin key)',
          parameters: [
            {
              name: 'history',
              in: 'query',
              schema: { type: 'integer', minimum: 0, maximum: 1440, default: 30 },
              description: 'minutes of per-minute trend to include',
            },
          ],
          responses: {
            200: { description: 'figures' },
            400: problemResponse('invalid history'),
            401: problemResponse('admin key required'),
          },
        },
      },
      '/v1/admin/degradation': {
        get: {
          summary: 'The degradation setting, deferred jobs by priority, and the last 20 audit entries (admin key)',
          responses: { 200: { description: 'setting' }, 401: problemResponse('admin key required') },
        },
        put: {
          summary: 'Change the degradation setting: paused priorities, recovery rate, fallback job types; audited (admin key)',
          parameters: [
            {
              name: 'X-Operator',
              in: 'header',
              required: false,
              schema: { type: 'string', maxLength: 100 },
              description: 'deprecated: the admin key names the operator (ADMIN_API_KEYS); if sent, it must be that name (else 400)',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: degradation } } },
          responses: {
            200: { description: 'the new setting' },
            400: problemResponse('invalid setting (nothing changed)'),
            401: problemResponse('admin key required'),
          },
        },
      },
      ...pausePaths(problemResponse, jobs.names),
      ...tenantPaths(problemResponse),
      ...opsPaths(problemResponse),
      ...sessionPaths(problemResponse),
      ...bulkPaths(problemResponse),
      ...consoleOpsPaths(problemResponse),
    },
  };
}
