// Configuration of issue 39 §1 and §2: configured keys of fewer than 32 characters are refused
// at start, naming the variable (the published dev keys excepted, in dev mode only); HTTP limits
// and the admin listener have stated defaults and name the variable when wrong.
import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { DEMO_TENANT, DEV_ADMIN_KEY, loadConfig } from '../../lib/config.js';
import { DEFAULT_HTTP_LIMITS } from '../../lib/http-limits.js';
import { connectionsCheckingIntervalMs } from '../../server/limits.js';

const load = (env: Record<string, string>, mode: 'dev' | 'production' = 'production') =>
  loadConfig(env, { jobTypes: defaultJobRegistry.names, mode });
const key31 = 'k'.repeat(31);
const key32 = 'k'.repeat(32);

describe('configured keys', () => {
  it('are refused below 32 characters, naming the variable (and the tenant or operator)', () => {
    expect(() => load({ SEED_TENANTS: `acme=${key31}` })).toThrow(
      /SEED_TENANTS: the api key of tenant "acme" must be at least 32 characters/,
    );
    expect(() => load({ ADMIN_API_KEY: key31 })).toThrow(/ADMIN_API_KEY must be at least 32 characters/);
    expect(() => load({ ADMIN_API_KEYS: `alice=${key32}|${key31}` })).toThrow(
      /ADMIN_API_KEYS: operator "alice": keys: each key must be at least 32 characters/,
    );
    expect(load({ SEED_TENANTS: `acme=${key32}` }).seedTenants).toEqual([{ tenantId: 'acme', apiKey: key32 }]);
    expect(load({ ADMIN_API_KEY: key32 }).adminKeys).toHaveLength(1);
    // A digest says nothing of the key's length: accepted as before.
    expect(load({ ADMIN_API_KEYS: `alice=sha256:${'a'.repeat(64)}` }).adminKeys).toHaveLength(1);
  });

  it("exempt only npm start's published dev keys, only in dev mode", () => {
    const dev = load({}, 'dev');
    expect(dev.seedTenants).toEqual([DEMO_TENANT]);
    expect(dev.adminApiKey).toBe(DEV_ADMIN_KEY);
    // What npm start hands its API process (DURABLE_JOBS_MODE=dev) passes too.
    expect(load({ SEED_TENANTS: 'demo=demo-key', ADMIN_API_KEY: 'admin-key' }, 'dev').seedTenants).toHaveLength(1);
    expect(() => load({ SEED_TENANTS: 'demo=demo-key' })).toThrow(/SEED_TENANTS: the api key of tenant "demo" must be at least 32/);
    expect(() => load({ ADMIN_API_KEY: 'admin-key' })).toThrow(/ADMIN_API_KEY must be at least 32/);
    expect(() => load({ SEED_TENANTS: 'acme=demo-key' }, 'dev')).toThrow(/tenant "acme" must be at least 32/);
    expect(() => load({ ADMIN_API_KEYS: 'alice=admin-key' }, 'dev')).toThrow(/ADMIN_API_KEYS/);
  });
});

describe('HTTP limits', () => {
  it('have the documented defaults, none switched off', () => {
    expect(load({}).httpLimits).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 15_000,
      idleTimeoutMs: 120_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: 4_096,
    });
    expect(DEFAULT_HTTP_LIMITS).toEqual(load({}).httpLimits);
    expect(connectionsCheckingIntervalMs(DEFAULT_HTTP_LIMITS)).toBe(3_750);
  });

  it('are read from HTTP_* and refused out of range, naming the variable', () => {
    const c = load({ HTTP_REQUEST_TIMEOUT_MS: '10000', HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_MAX_CONNECTIONS: '500' }).httpLimits;
    expect(c).toMatchObject({ requestTimeoutMs: 10_000, headersTimeoutMs: 5_000, maxConnections: 500 });
    expect(() => load({ HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS must be a whole number 1000-3600000/);
    expect(() => load({ HTTP_IDLE_TIMEOUT_MS: '30s' })).toThrow(/HTTP_IDLE_TIMEOUT_MS must be a whole number/);
    expect(() => load({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '-1' })).toThrow(/HTTP_KEEP_ALIVE_TIMEOUT_MS/);
    expect(() => load({ HTTP_MAX_CONNECTIONS: '1' })).toThrow(/HTTP_MAX_CONNECTIONS must be a whole number 16-1000000/);
    expect(() => load({ HTTP_REQUEST_TIMEOUT_MS: '5000' })).toThrow(
      /HTTP_HEADERS_TIMEOUT_MS \(15000\) must not exceed HTTP_REQUEST_TIMEOUT_MS \(5000\)/,
    );
  });
});

describe('the admin listener', () => {
  it('listens on loopback port 9081 by default; ADMIN_LISTEN_PORT set must bind, "off" disables it', () => {
    expect(load({}).adminListener).toEqual({ host: '127.0.0.1', port: 9081, required: false, enabled: true });
    expect(load({ ADMIN_LISTEN_PORT: '9500', ADMIN_LISTEN_HOST: '10.0.0.5' }).adminListener).toEqual({
      host: '10.0.0.5',
      port: 9500,
      required: true,
      enabled: true,
    });
    expect(load({ ADMIN_LISTEN_PORT: '0' }).adminListener).toMatchObject({ port: 0, required: true });
    expect(load({ ADMIN_LISTEN_PORT: 'off' }).adminListener.enabled).toBe(false);
    expect(() => load({ ADMIN_LISTEN_PORT: 'metrics' })).toThrow(/ADMIN_LISTEN_PORT must be a port number/);
    expect(() => load({ ADMIN_LISTEN_PORT: '8080' })).toThrow(/ADMIN_LISTEN_PORT must differ from HTTP_PORT/);
  });
});
