/**
 * Tenants and their API keys as data (issue 36 §5): create a tenant, list tenants with their
 * keys' metadata, add a key (generated, shown once), revoke a key. The admin HTTP routes, the
 * `tenants` CLI (through them) and backend code (`durable-jobs/client`) all use this module,
 * so validation and answers are the same everywhere. Nothing returned ever holds a key hash;
 * only `addKey` returns a raw key, the one time it exists outside the caller.
 */
import type pg from 'pg';
import { z } from 'zod';
import { pgOr503 } from '../lib/db.js';
import { NotFoundError, StateConflictError, ValidationError } from '../lib/errors.js';
import { apiKeyHash, apiKeyPrefix, generateApiKey, MIN_CONFIGURED_KEY_LENGTH } from '../lib/ids.js';
import { zodFieldIssues } from '../lib/validation.js';
import { insertTenantKey, revokeTenantKey } from '../store/tenant-keys.js';
import { insertTenant, listTenants, setHighPriority, tenantExists, type TenantInfo, type TenantKeyInfo } from '../store/tenants.js';
import { setIntakeLimit } from '../store/rate-limit.js';
import { INTAKE_LIMIT_SHAPE } from './rate-limit.js';

export type { TenantInfo, TenantKeyInfo };

/** The rule `SEED_TENANTS` has always applied (lib/config.ts): safe in URLs, logs and search attributes. */
export const TENANT_ID = z
  .string({ error: (iss) => (iss.input === undefined ? 'required: the tenant ID' : 'a tenant ID is a string') })
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'a tenant ID is 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit');
export const KEY_NAME = z
  .string({
    error: (iss) => (iss.input === undefined ? 'required: what the key is for (ci, billing-service, ...)' : 'a key name is a string'),
  })
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/,
    'a key name is 1-63 characters of A-Z, a-z, 0-9, _, . and -, starting with a letter or digit',
  );

export interface AddedKey {
  tenantId: string;
  name: string;
  /** The raw key: returned this once and never again (only its hash is stored). */
  key: string;
  /** `dj_live_` and the next 8 characters: what support sees of it later; null for a key chosen by hand. */
  prefix: string | null;
}

export interface TenantsAdmin {
  /** Creates a tenant with no keys. `StateConflictError` (409) if it exists. */
  createTenant(tenantId: string, opts?: { actor?: string }): Promise<TenantInfo>;
  /** Every tenant, with its keys' metadata (never a hash). */
  listTenants(): Promise<TenantInfo[]>;
  /**
   * Adds a live key named `name` to the tenant. `key` default: a new `dj_live_` key of 192 random
   * bits (pass one only to carry a key over from elsewhere; at least 32 characters).
   * `NotFoundError` for an unknown tenant; `StateConflictError` if a live key has that name.
   */
  addKey(tenantId: string, opts: { name: string; key?: string; actor?: string }): Promise<AddedKey>;
  /**
   * Grants (`true`) or withdraws (`false`) the tenant's right to submit `priority: high`
   * (default: not granted). Applies to the next submit. `NotFoundError` for an unknown tenant.
   */
  setHighPriority(tenantId: string, allowed: boolean, opts?: { actor?: string }): Promise<TenantInfo>;
  /**
   * Sets the tenant's intake rate limit (issue 38 §5): `ratePerSecond` submits a second on
   * average, `burst` at once (default one second's worth); `ratePerSecond: null` removes it
   * (the default). Applies to the next submit in every API process. `NotFoundError` for an
   * unknown tenant.
   */
  setIntakeLimit(
    tenantId: string,
    limit: { ratePerSecond: number | null; burst?: number | null },
    opts?: { actor?: string },
  ): Promise<TenantInfo>;
  /** Revokes the tenant's live key of that name: it answers 401 from the next request on. */
  revokeKey(tenantId: string, name: string, opts?: { actor?: string }): Promise<TenantKeyInfo>;
}

function valid<T>(schema: z.ZodType<T>, value: unknown, path: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError(`invalid ${path}`, zodFieldIssues(r.error, path));
  return r.data;
}

const pgCode = (err: unknown) => (err as { code?: string }).code;
const pgConstraint = (err: unknown) => (err as { constraint?: string }).constraint;

/** `actor` names who acted in the key rows (default `client`: backend code without an operator). */
export function createTenantsAdmin(pool: pg.Pool): TenantsAdmin {
  const one = async (tenantId: string): Promise<TenantInfo> => {
    const [t] = await pgOr503(() => listTenants(pool, tenantId));
    if (!t) throw new NotFoundError(`tenant "${tenantId}" not found`);
    return t;
  };
  return {
    async createTenant(tenantId, opts = {}) {
      const id = valid(TENANT_ID, tenantId, 'tenantId');
      if (!(await pgOr503(() => insertTenant(pool, id, opts.actor ?? 'client'))))
        throw new StateConflictError(`tenant "${id}" already exists`, { slug: 'tenant-exists', title: 'Tenant already exists' });
      return one(id);
    },

    listTenants: () => pgOr503(() => listTenants(pool)),

    async addKey(tenantId, opts) {
      const id = valid(TENANT_ID, tenantId, 'tenantId');
      const name = valid(KEY_NAME, opts.name, 'name');
      const key =
        opts.key === undefined
          ? generateApiKey()
          : valid(
              z
                .string()
                .regex(
                  new RegExp(`^[\\x21-\\x7e]{${MIN_CONFIGURED_KEY_LENGTH},255}$`),
                  `a key is ${MIN_CONFIGURED_KEY_LENGTH}-255 visible ASCII characters`,
                ),
              opts.key,
              'key',
            );
      const prefix = apiKeyPrefix(key);
      try {
        await pgOr503(() =>
          insertTenantKey(pool, { tenantId: id, name, keyHash: apiKeyHash(key), keyPrefix: prefix, createdBy: opts.actor ?? 'client' }),
        );
      } catch (err) {
        // The statement's own constraints answer, so two racing requests cannot both succeed.
        if (pgCode(err) === '23503') throw new NotFoundError(`tenant "${id}" not found`);
        if (pgCode(err) === '23505' && pgConstraint(err) === 'tenant_keys_live_name')
          throw new StateConflictError(`tenant "${id}" already has a live key named "${name}"; revoke it first or choose another name`, {
            slug: 'tenant-key-exists',
            title: 'Key name in use',
          });
        if (pgCode(err) === '23505' && pgConstraint(err) === 'tenant_keys_hash')
          throw new StateConflictError('that key is already in use; choose another (or omit it to have one generated)', {
            slug: 'tenant-key-exists',
            title: 'Key in use',
          });
        throw err;
      }
      return { tenantId: id, name, key, prefix };
    },

    async setHighPriority(tenantId, allowed, opts = {}) {
      const id = valid(TENANT_ID, tenantId, 'tenantId');
      const may = valid(z.boolean({ error: 'true or false' }), allowed, 'mayUseHighPriority');
      if (!(await pgOr503(() => setHighPriority(pool, id, may, opts.actor ?? 'client'))))
        throw new NotFoundError(`tenant "${id}" not found`);
      return one(id);
    },

    async setIntakeLimit(tenantId, limit, opts = {}) {
      const id = valid(TENANT_ID, tenantId, 'tenantId');
      const rate = valid(INTAKE_LIMIT_SHAPE.intakeRatePerSecond, limit.ratePerSecond, 'intakeRatePerSecond') ?? null;
      const burst = valid(INTAKE_LIMIT_SHAPE.intakeBurst, limit.burst, 'intakeBurst') ?? null;
      if (
        !(await pgOr503(() =>
          setIntakeLimit(pool, id, { ratePerSecond: rate, burst: rate === null ? null : burst }, opts.actor ?? 'client'),
        ))
      )
        throw new NotFoundError(`tenant "${id}" not found`);
      return one(id);
    },

    async revokeKey(tenantId, name, opts = {}) {
      const id = valid(TENANT_ID, tenantId, 'tenantId');
      const keyName = valid(KEY_NAME, name, 'name');
      if (!(await pgOr503(() => revokeTenantKey(pool, id, keyName, opts.actor ?? 'client')))) {
        if (!(await pgOr503(() => tenantExists(pool, id)))) throw new NotFoundError(`tenant "${id}" not found`);
        throw new NotFoundError(`tenant "${id}" has no live key named "${keyName}"`);
      }
      const revoked = (await one(id)).keys.filter((k) => k.name === keyName && k.revokedAt !== null);
      return revoked[revoked.length - 1]!;
    },
  };
}

/** `POST /v1/admin/tenants`. */
export const CREATE_TENANT_SCHEMA = z.object({ id: TENANT_ID }).strict();
/** `PATCH /v1/admin/tenants/{id}`: the tenant's settings, each optional, at least one. */
export const TENANT_SETTINGS_SCHEMA = z
  .object({ mayUseHighPriority: z.boolean({ error: 'true or false' }).optional(), ...INTAKE_LIMIT_SHAPE })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'name a setting: mayUseHighPriority, intakeRatePerSecond, intakeBurst',
    path: ['mayUseHighPriority'],
  });
/** `POST /v1/admin/tenants/{id}/keys`: the key is always generated (a chosen key never travels over HTTP). */
export const ADD_KEY_SCHEMA = z.object({ name: KEY_NAME }).strict();
