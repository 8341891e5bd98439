/** `SEED_TENANTS` and `SEED_HIGH_PRIORITY_TENANTS`, parsed for lib/config.ts (the only reader of the environment). */
import { ConfigError } from './errors.js';
import { MIN_CONFIGURED_KEY_LENGTH } from './ids.js';

/** One tenant `SEED_TENANTS` ensures at start, with its key. */
export interface TenantSeed {
  tenantId: string;
  apiKey: string;
  /** Listed in SEED_HIGH_PRIORITY_TENANTS: seeding grants it `priority: high` (F11). */
  highPriority?: boolean;
}

/**
 * `SEED_TENANTS`: `tenant=apikey,...`, each key at least 32 characters. `publicDevKey`: the one
 * seed exempt from that rule, `npm start`'s documented demo tenant and key (dev mode only): the
 * contract (API.md) publishes it, so its length protects nothing, and it opens only a loopback stack.
 */
export function parseTenants(raw: string, publicDevKey?: TenantSeed): TenantSeed[] {
  if (raw.trim() === '') return [];
  return raw.split(',').map((pair) => {
    const [tenantId, apiKey, extra] = pair.split('=');
    if (!tenantId || !apiKey || extra !== undefined || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(tenantId.trim())) {
      throw new ConfigError(`SEED_TENANTS must be "tenant=apikey,..." with tenant ids of a-z, 0-9, _ and -; got an invalid entry`);
    }
    const published = publicDevKey?.tenantId === tenantId.trim() && publicDevKey.apiKey === apiKey.trim();
    if (apiKey.trim().length < MIN_CONFIGURED_KEY_LENGTH && !published)
      throw new ConfigError(
        `SEED_TENANTS: the api key of tenant "${tenantId.trim()}" must be at least ${MIN_CONFIGURED_KEY_LENGTH} characters (e.g. openssl rand -hex 24)`,
      );
    return { tenantId: tenantId.trim(), apiKey: apiKey.trim() };
  });
}

/** SEED_HIGH_PRIORITY_TENANTS: tenant IDs, each one of SEED_TENANTS, that seeding lets submit `priority: high`. */
export function withHighPriority(seeds: TenantSeed[], raw: string): TenantSeed[] {
  const ids = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const unknown = ids.find((id) => !seeds.some((t) => t.tenantId === id));
  if (unknown !== undefined)
    throw new ConfigError(
      `SEED_HIGH_PRIORITY_TENANTS must list tenant IDs of SEED_TENANTS, separated by commas; "${unknown.slice(0, 64)}" is not one`,
    );
  return seeds.map((t) => (ids.includes(t.tenantId) ? { ...t, highPriority: true } : t));
}
