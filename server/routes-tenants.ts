import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ValidationError } from '../lib/errors.js';
import { zodFieldIssues } from '../lib/validation.js';
import { ADD_KEY_SCHEMA, CREATE_TENANT_SCHEMA, TENANT_SETTINGS_SCHEMA, type TenantsAdmin } from '../services/tenants.js';
import { operatorOf, requireAdmin, type AdminKeys } from './auth.js';
import { access } from './roles.js';
import { parseOr400 } from './problems.js';

export interface TenantRouteDeps {
  tenants: TenantsAdmin;
  adminApiKey: AdminKeys;
}

const NO_QUERY = z.object({}).strict();
const body = <T>(schema: z.ZodType<T>, value: unknown, allowed: string): T => {
  const r = schema.safeParse(value ?? {});
  if (!r.success)
    throw new ValidationError('invalid request body', zodFieldIssues(r.error, undefined, `unknown field; allowed: ${allowed}`));
  return r.data;
};

/**
 * Tenants and their API keys (admin key). Each change is logged with its operator, tenant and
 * key name (and a generated key's visible prefix), and recorded in the key's row (created_by,
 * revoked_by); the raw key is in the one 201 answer that creates it, never in a log.
 */
export function registerTenantRoutes(app: FastifyInstance, deps: TenantRouteDeps): void {
  app.post('/v1/admin/tenants', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { id } = body(CREATE_TENANT_SCHEMA, req.body, 'id');
    const actor = operatorOf(req);
    const tenant = await deps.tenants.createTenant(id, { actor });
    req.log.info({ actor, tenantId: id }, 'tenant created');
    return reply.code(201).header('Location', `/v1/admin/tenants/${id}`).send(tenant);
  });

  app.get('/v1/admin/tenants', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    parseOr400(NO_QUERY, req.query, 'query');
    return { tenants: await deps.tenants.listTenants() };
  });

  app.patch<{ Params: { id: string } }>('/v1/admin/tenants/:id', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const settings = body(TENANT_SETTINGS_SCHEMA, req.body, 'mayUseHighPriority, intakeRatePerSecond, intakeBurst');
    const { mayUseHighPriority, intakeRatePerSecond, intakeBurst } = settings;
    if (intakeBurst !== undefined && intakeRatePerSecond === undefined)
      throw new ValidationError('invalid request body', [
        { path: 'intakeRatePerSecond', message: 'required with intakeBurst: the rate the bucket refills at' },
      ]);
    const actor = operatorOf(req);
    let tenant;
    if (mayUseHighPriority !== undefined) tenant = await deps.tenants.setHighPriority(req.params.id, mayUseHighPriority, { actor });
    if (intakeRatePerSecond !== undefined)
      tenant = await deps.tenants.setIntakeLimit(
        req.params.id,
        { ratePerSecond: intakeRatePerSecond, burst: intakeBurst ?? null },
        { actor },
      );
    req.log.info({ actor, tenantId: tenant!.id, ...settings }, 'tenant settings changed');
    return tenant;
  });

  app.post<{ Params: { id: string } }>('/v1/admin/tenants/:id/keys', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const { name } = body(ADD_KEY_SCHEMA, req.body, 'name');
    const actor = operatorOf(req);
    const added = await deps.tenants.addKey(req.params.id, { name, actor });
    req.log.info({ actor, tenantId: added.tenantId, keyName: name, keyPrefix: added.prefix }, 'tenant key added');
    // The only time the key exists outside its holder: no cache may keep the answer.
    return reply.code(201).header('Cache-Control', 'no-store').send(added);
  });

  app.delete<{ Params: { id: string; name: string } }>('/v1/admin/tenants/:id/keys/:name', access('admin'), async (req, reply) => {
    if (!requireAdmin(deps.adminApiKey, req, reply)) return reply;
    const actor = operatorOf(req);
    const revoked = await deps.tenants.revokeKey(req.params.id, req.params.name, { actor });
    req.log.info({ actor, tenantId: req.params.id, keyName: req.params.name, keyPrefix: revoked.prefix }, 'tenant key revoked');
    return { tenantId: req.params.id, ...revoked };
  });
}
