import { JOB_STATES } from '../contract/job-types.js';
/** The filters and paging of both job lists (services/job-lists.ts). */
export function listParameters(): Array<Record<string, unknown>> {
  return [
    {
      name: 'state',
      in: 'query',
      description: 'one or several states: repeat the parameter or separate with commas',
      schema: { type: 'array', items: { type: 'string', enum: [...JOB_STATES] } },
      style: 'form',
      explode: true,
    },
    { name: 'type', in: 'query', schema: { type: 'string', maxLength: 300 } },
    {
      name: 'createdAfter',
      in: 'query',
      description: 'created at or after (ISO 8601 with a zone)',
      schema: { type: 'string', format: 'date-time' },
    },
    {
      name: 'createdBefore',
      in: 'query',
      description: 'created before (ISO 8601 with a zone)',
      schema: { type: 'string', format: 'date-time' },
    },
    { name: 'tag', in: 'query', description: 'key:value: jobs submitted with this tag', schema: { type: 'string' } },
    { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
    { name: 'cursor', in: 'query', description: 'nextCursor of the previous page, with the same filter', schema: { type: 'string' } },
  ];
}
