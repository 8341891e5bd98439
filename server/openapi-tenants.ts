import { z } from 'zod';
import { ADD_KEY_SCHEMA, CREATE_TENANT_SCHEMA, TENANT_SETTINGS_SCHEMA } from '../services/tenants.js';
import { PUT_COMPLETION_WEBHOOK_SCHEMA } from '../services/tenant-webhooks.js';

/**
 * The tenant and key routes of the OpenAPI document (server/openapi.ts), from the schemas that
 * validate them. `problemResponse` is the document's own.
 */
export function tenantPaths(problemResponse: (description: string) => unknown): Record<string, unknown> {
  const json = (s: z.ZodType) => z.toJSONSchema(s, { target: 'openapi-3.0' });
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' } };
  return {
    '/v1/admin/tenants': {
      get: {
        summary:
          'Every tenant with its keys: name, visible prefix, created, last used (to about a minute), revoked; never a key or hash (admin key)',
        responses: {
          200: { description: '{"tenants": [{"id","createdAt","liveKeys","keys"}]}' },
          401: problemResponse('admin key required'),
        },
      },
      post: {
        summary: 'Create a tenant with no keys (admin key)',
        requestBody: { required: true, content: { 'application/json': { schema: json(CREATE_TENANT_SCHEMA) } } },
        responses: {
          201: { description: 'the tenant' },
          400: problemResponse('invalid ID (nothing created)'),
          401: problemResponse('admin key required'),
          409: problemResponse('the tenant exists'),
        },
      },
    },
    '/v1/admin/tenants/{id}': {
      patch: {
        summary:
          "Change a tenant's settings: mayUseHighPriority grants or withdraws submitting priority high (default false); intakeRatePerSecond and intakeBurst set its intake rate limit (null: none, the default); from its next submit on (admin key)",
        parameters: [id],
        requestBody: { required: true, content: { 'application/json': { schema: json(TENANT_SETTINGS_SCHEMA) } } },
        responses: {
          200: { description: 'the tenant' },
          400: problemResponse('invalid tenant ID or setting (nothing changed)'),
          401: problemResponse('admin key required'),
          404: problemResponse('unknown tenant'),
        },
      },
    },
    '/v1/admin/tenants/{id}/keys': {
      post: {
        summary:
          'Add a generated key (dj_live_ + 192 random bits) named `name` to the tenant. The answer holds the key: the only time it is shown; only its hash is stored (admin key)',
        parameters: [id],
        requestBody: { required: true, content: { 'application/json': { schema: json(ADD_KEY_SCHEMA) } } },
        responses: {
          201: { description: '{"tenantId","name","key","prefix"} with Cache-Control: no-store' },
          400: problemResponse('invalid tenant ID or name (nothing written)'),
          401: problemResponse('admin key required'),
          404: problemResponse('unknown tenant'),
          409: problemResponse('the tenant has a live key of that name'),
        },
      },
    },
    '/v1/admin/tenants/{id}/completion-webhook': {
      put: {
        summary:
          "Set (or replace) the tenant's completion webhook: job types that declare notify.completionWebhook post a signed job.succeeded event (Standard Webhooks) to `url`. The answer holds the new signing secret (whsec_...): the only time it is shown; it replaces the old one at once (admin key)",
        parameters: [id],
        requestBody: { required: true, content: { 'application/json': { schema: json(PUT_COMPLETION_WEBHOOK_SCHEMA) } } },
        responses: {
          200: { description: '{"tenantId","url","secret","secretPrefix","updatedAt","updatedBy"} with Cache-Control: no-store' },
          400: problemResponse('url missing or not an http(s) URL (nothing changed)'),
          401: problemResponse('admin key required'),
          404: problemResponse('unknown tenant'),
        },
      },
      get: {
        summary: "The tenant's completion webhook: URL and the secret's prefix, never the secret (admin key)",
        parameters: [id],
        responses: {
          200: { description: '{"tenantId","url","secretPrefix","updatedAt","updatedBy"}' },
          401: problemResponse('admin key required'),
          404: problemResponse('none set'),
        },
      },
      delete: {
        summary: "Remove the tenant's completion webhook: pending deliveries end failed (webhook_unset) (admin key)",
        parameters: [id],
        responses: { 204: { description: 'removed' }, 401: problemResponse('admin key required'), 404: problemResponse('none set') },
      },
    },
    '/v1/admin/tenants/{id}/keys/{name}': {
      delete: {
        summary: "Revoke the tenant's live key of that name: 401 from the next request on, in every API process (admin key)",
        parameters: [id, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: { description: 'the revoked key (metadata)' },
          401: problemResponse('admin key required'),
          404: problemResponse('unknown tenant, or no live key of that name'),
        },
      },
    },
  };
}
