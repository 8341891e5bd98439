import { z } from 'zod';
import { BACKFILL_SCHEMA, MAX_BACKFILL_WINDOWS, PAUSE_SCHEMA, TRIGGER_SCHEMA } from '../services/schedule-admin-schemas.js';
import { DELIVERY_FILTER_OUTCOMES } from '../store/webhook-deliveries.js';
import { WINDOW_STATES } from '../services/schedule-windows.js';

/**
 * The schedule and webhook-delivery routes of the OpenAPI document (server/openapi.ts), from the
 * schemas that validate them (server/routes-schedules.ts, server/routes-webhook-deliveries.ts).
 */
export function consoleOpsPaths(problemResponse: (description: string) => unknown): Record<string, unknown> {
  const json = (s: z.ZodType) => z.toJSONSchema(s, { target: 'openapi-3.0', io: 'input' });
  const name = { name: 'name', in: 'path', required: true, schema: { type: 'string' }, description: 'the scheduled job type' };
  const common = { 401: problemResponse('admin key required'), 403: problemResponse('an operator key (or session) is required') };
  const action = (summary: string, schema: z.ZodType, ok: number, okText: string) => ({
    post: {
      summary,
      parameters: [name],
      requestBody: { required: true, content: { 'application/json': { schema: json(schema) } } },
      responses: {
        [ok]: { description: okText },
        400: problemResponse('invalid request (the field is named)'),
        ...common,
        404: problemResponse('no scheduled job type of that name, or its Schedule does not exist yet'),
      },
    },
  });
  return {
    '/v1/admin/schedules': {
      get: {
        summary: 'The scheduled job types and their Temporal Schedules: paused, note, next and recent runs, tenants (viewer)',
        responses: { 200: { description: '{"items": [...]}' }, 401: common[401] },
      },
    },
    '/v1/admin/schedules/{name}': {
      get: {
        summary: 'One scheduled job type: its Schedule and the operator actions on it, newest first (viewer)',
        parameters: [name],
        responses: { 200: { description: 'the schedule' }, 401: common[401], 404: problemResponse('no scheduled job type of that name') },
      },
    },
    '/v1/admin/schedules/{name}/windows': {
      get: {
        summary: `The windows in [from, to) (default the last 14), newest first, each ${WINDOW_STATES.join(' | ')} with the reason (viewer)`,
        parameters: [
          name,
          { name: 'from', in: 'query', schema: { type: 'string', format: 'date-time' } },
          { name: 'to', in: 'query', schema: { type: 'string', format: 'date-time' } },
        ],
        responses: {
          200: { description: '{"name", "from", "to", "windows": [...]}' },
          400: problemResponse('a bad or too long range (named)'),
          401: common[401],
        },
      },
    },
    '/v1/admin/schedules/{name}/pause': action('Pause the Schedule, with a reason (audited; operator)', PAUSE_SCHEMA, 200, 'the schedule'),
    '/v1/admin/schedules/{name}/unpause': action(
      'Unpause the Schedule, with a reason (audited; operator)',
      PAUSE_SCHEMA,
      200,
      'the schedule',
    ),
    '/v1/admin/schedules/{name}/trigger': action(
      "Fire the Schedule now: the current window's jobs start, or are found (audited; operator)",
      TRIGGER_SCHEMA,
      202,
      '{"scheduleId", "window", "jobIds"}',
    ),
    '/v1/admin/schedules/{name}/backfill': action(
      `Run the windows the Schedule matches in [from, to), in the past, at most ${MAX_BACKFILL_WINDOWS} windows (audited; operator)`,
      BACKFILL_SCHEMA,
      202,
      '{"scheduleId", "windows": [{"start", "end", "jobIds"}]}',
    ),
    '/v1/admin/webhook-deliveries': {
      get: {
        summary: 'Inbound webhook deliveries, newest first, by keyset pages: what each did, never its data (viewer)',
        parameters: [
          { name: 'source', in: 'query', schema: { type: 'string' } },
          { name: 'event', in: 'query', schema: { type: 'string' } },
          { name: 'outcome', in: 'query', schema: { type: 'string', enum: [...DELIVERY_FILTER_OUTCOMES] } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
          { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'nextCursor of the previous page, with the same filter' },
        ],
        responses: {
          200: { description: '{"items": [...], "nextCursor"?, "limit"}' },
          400: problemResponse('an unknown filter or outcome, or a forged or foreign cursor (named)'),
          401: common[401],
        },
      },
    },
  };
}
