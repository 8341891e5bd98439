import { z } from 'zod';
import { pauseBody } from '../services/degradation.js';

/**
 * The pause routes of the OpenAPI document (server/openapi.ts, issue 38 §4), from the schema
 * that validates them. `problemResponse` is the document's own; `jobTypes` the registered names.
 */
export function pausePaths(problemResponse: (description: string) => unknown, jobTypes: readonly string[]): Record<string, unknown> {
  const body = {
    required: true,
    content: { 'application/json': { schema: z.toJSONSchema(pauseBody(jobTypes), { target: 'openapi-3.0' }) } },
  };
  const changed = {
    200: { description: 'what is paused now, and the deferred jobs by priority' },
    400: problemResponse('invalid target, unknown job type or tenant (nothing changed)'),
    401: problemResponse('admin key required'),
  };
  return {
    '/v1/admin/pauses': {
      get: {
        summary: 'What is paused: priorities, job types, tenants and tenant-type pairs, since when and by whom (admin key)',
        responses: { 200: { description: 'the pauses' }, 401: problemResponse('admin key required') },
      },
      post: {
        summary:
          "Pause a priority, a job type, a tenant or a tenant's type: unstarted jobs wait, started ones stop at their next step; audited (admin key)",
        requestBody: body,
        responses: changed,
      },
    },
    '/v1/admin/pauses/resume': {
      post: {
        summary: 'Lift a pause; the jobs it held resume at the recovery rate; audited (admin key)',
        requestBody: body,
        responses: changed,
      },
    },
  };
}
