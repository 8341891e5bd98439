import { z } from 'zod';
import { JOB_INPUT_SCHEMAS, SUBMIT_BODY_SCHEMA } from '../lib/job-inputs.js';
import { JOB_STATES } from '../workflows/job-types.js';

/**
 * The OpenAPI document, generated from the same zod schemas that validate requests, so the
 * two cannot drift.
 */
export function openApiDocument(version: string): Record<string, unknown> {
  const json = (s: z.ZodType) => z.toJSONSchema(s, { target: 'openapi-3.0' });
  const problem = { $ref: '#/components/schemas/Problem' };
  const problemResponse = (description: string) => ({ description, content: { 'application/problem+json': { schema: problem } } });
  const inputs = Object.fromEntries(Object.entries(JOB_INPUT_SCHEMAS).map(([k, s]) => [`${k}Input`, json(s)]));
  return {
    openapi: '3.0.3',
    info: { title: 'durable-jobs', version, description: 'Background jobs on Temporal and PostgreSQL: durable intake, effects once, every state visible.' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ...inputs,
        SubmitJob: { ...json(SUBMIT_BODY_SCHEMA), description: `input must match the schema of its type: ${Object.keys(JOB_INPUT_SCHEMAS).map((k) => `${k}Input`).join(', ')}` },
        Accepted: { type: 'object', properties: { jobId: { type: 'string' }, status: { type: 'string' }, statusUrl: { type: 'string' }, retryAfterSeconds: { type: 'integer' } } },
        JobStatus: {
          type: 'object',
          required: ['jobId', 'type', 'status', 'attempts', 'createdAt', 'updatedAt'],
          properties: {
            jobId: { type: 'string' }, type: { type: 'string' }, status: { type: 'string', enum: [...JOB_STATES] },
            attempts: { type: 'integer' }, createdAt: { type: 'string', format: 'date-time' }, updatedAt: { type: 'string', format: 'date-time' },
            result: {}, error: { type: 'object' }, deadLetterId: { type: 'string' }, nextPollSeconds: { type: 'integer' },
          },
        },
        Problem: {
          type: 'object', required: ['type', 'title', 'status'],
          properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' }, errors: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } } },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/jobs': {
        post: {
          summary: 'Submit a job (one business intent per Idempotency-Key)',
          parameters: [{ name: 'Idempotency-Key', in: 'header', required: true, schema: { type: 'string', minLength: 8, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' } }],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/SubmitJob' } } } },
          responses: {
            202: { description: 'accepted: a new durable job', content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } } },
            200: { description: 'the same intent again: the same job (Idempotent-Replayed: true)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } } },
            400: problemResponse('missing or malformed key, unknown type, invalid input, malformed JSON'),
            401: problemResponse('missing or wrong API key'),
            413: problemResponse('body over 256 KiB'),
            415: problemResponse('not application/json'),
            422: problemResponse('key reused with a different type or input'),
            503: problemResponse('Temporal or Postgres cannot take the job; retry with the same key after Retry-After'),
          },
        },
      },
      '/v1/jobs/{jobId}': {
        get: {
          summary: 'A job\'s status', parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { 200: { description: 'status', content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } } }, 404: problemResponse('no such job for this tenant') },
        },
      },
      '/v1/jobs/{jobId}/cancel': {
        post: {
          summary: 'Cancel a job that has not finished', parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { 202: { description: 'cancellation requested' }, 404: problemResponse('no such job'), 409: problemResponse('already finished') },
        },
      },
      '/healthz': { get: { summary: 'process up', security: [], responses: { 200: { description: 'up' } } } },
      '/readyz': { get: { summary: 'Temporal and Postgres reachable', security: [], responses: { 200: { description: 'ready' }, 503: problemResponse('not ready') } } },
      '/metrics': { get: { summary: 'Prometheus metrics', security: [], responses: { 200: { description: 'text exposition format' } } } },
    },
  };
}
