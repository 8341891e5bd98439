import { z } from 'zod';
import { BULK_REQUEST, CLUSTER_QUERY, RERUN_REQUEST, STOP_REQUEST } from '../services/bulk-actions.js';

/**
 * The bulk-action, rerun and failure-cluster routes of the OpenAPI document (server/openapi.ts),
 * from the schemas that validate them (server/routes-bulk.ts). `problemResponse` is the document's own.
 */
export function bulkPaths(problemResponse: (description: string) => unknown): Record<string, unknown> {
  const json = (s: z.ZodType) => z.toJSONSchema(s, { target: 'openapi-3.0', io: 'input' });
  const bulkId = { name: 'bulkId', in: 'path', required: true, schema: { type: 'string', pattern: '^bulk-[0-9a-f-]{36}$' } };
  const admin = problemResponse('admin key required');
  return {
    '/v1/admin/bulk-actions': {
      post: {
        summary:
          'Cancel, rerun, retry-now (jobs) or discard, replay (dead letters) by filter or IDs: dryRun previews; a filter matching nothing or more than limit (default 1000) is a 422 naming it and starts nothing (admin key)',
        requestBody: { required: true, content: { 'application/json': { schema: json(BULK_REQUEST) } } },
        responses: {
          200: { description: 'the preview (dryRun): count, limit, groups per tenant and type, targets, rerun plans' },
          202: { description: '{"bulkId" (or "replayId" for a replay), "action", "count", "statusUrl"}' },
          400: problemResponse('invalid request or a filter key that does not apply to the action (named)'),
          401: admin,
          404: problemResponse('an ID names no job or dead letter'),
          409: problemResponse('a job type this deployment does not run'),
          422: problemResponse('the filter or IDs match nothing or more than limit (errors[0].path names which)'),
          503: problemResponse('Temporal or Postgres cannot take it now; nothing started'),
        },
      },
      get: {
        summary: 'Bulk actions, newest first (admin key)',
        parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }],
        responses: { 200: { description: '{"bulkActions": [...]}' }, 401: admin },
      },
    },
    '/v1/admin/bulk-actions/{bulkId}': {
      get: {
        summary: 'One bulk action: counts, live progress while it runs, commands and audit rows per item (admin key)',
        parameters: [bulkId, { name: 'items', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 1000, default: 200 } }],
        responses: { 200: { description: 'the bulk action' }, 401: admin, 404: problemResponse('no such bulk action') },
      },
    },
    ...Object.fromEntries(
      (['pause', 'resume', 'stop'] as const).map((command) => [
        `/v1/admin/bulk-actions/{bulkId}/${command}`,
        {
          post: {
            summary: `${command[0]!.toUpperCase()}${command.slice(1)} a running bulk action; recorded with its operator (admin key)`,
            parameters: [bulkId],
            ...(command === 'stop' ? { requestBody: { content: { 'application/json': { schema: json(STOP_REQUEST) } } } } : {}),
            responses: {
              202: { description: 'accepted' },
              401: admin,
              404: problemResponse('no such bulk action'),
              409: problemResponse('it is over'),
            },
          },
        },
      ]),
    ),
    '/v1/admin/jobs/{jobId}/rerun': {
      post: {
        summary:
          'Rerun a finished job as <jobId>-rerun-<n> (rerunOf links it); fromStep reuses the effects before it; dryRun lists each effect as reuse or execute (admin key)',
        parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: { content: { 'application/json': { schema: json(RERUN_REQUEST) } } },
        responses: {
          200: { description: 'the plan (dryRun)' },
          202: { description: 'the rerun started, with its plan' },
          400: problemResponse('invalid request or a step the job does not have (fromStep)'),
          401: admin,
          404: problemResponse('no such job'),
          409: problemResponse('the job is still running (job-not-finished)'),
        },
      },
    },
    '/v1/admin/dead-letters/clusters': {
      get: {
        summary:
          'Dead letters (default open) grouped by normalized error signature x job type x tenant, largest first, with count and first/last seen (admin key)',
        parameters: Object.keys(CLUSTER_QUERY.shape).map((name) => ({ name, in: 'query', schema: { type: 'string' } })),
        responses: { 200: { description: '{"clusters": [...], "deadLetters", "truncated"}' }, 401: admin },
      },
    },
  };
}
