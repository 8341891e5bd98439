import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { loadConfig } from '../../lib/config.js';

const names = defaultJobRegistry.names;

describe('configuration', () => {
  it('has the documented defaults in dev mode', () => {
    const c = loadConfig({}, { jobTypes: names, mode: 'dev' });
    expect(c).toMatchObject({
      httpPort: 8080,
      temporalAddress: undefined,
      temporalNamespace: 'default',
      temporalUiPort: 8233,
      databaseUrl: undefined,
      providerUrl: undefined,
      simPort: 8090,
      workers: 1,
      adminApiKey: 'admin-key',
      simWebhookUrl: 'http://127.0.0.1:8080/v1/webhooks/sim',
      taskQueue: 'durable-jobs',
    });
    // The demo tenant may try priority high (load shedding in `npm start`); no other tenant by default (F11).
    expect(c.seedTenants).toEqual([{ tenantId: 'demo', apiKey: 'demo-key', highPriority: true }]);
  });

  it('grants priority high at seeding only to the tenants SEED_HIGH_PRIORITY_TENANTS lists, each one of SEED_TENANTS', () => {
    const seeds = (env: Record<string, string>, mode: 'dev' | 'production' = 'production') =>
      loadConfig(env, { jobTypes: names, mode }).seedTenants;
    expect(seeds({ SEED_TENANTS: 'alpha=alpha-key-1-0123456789abcdef0123456789,beta=beta-key-1-0123456789abcdef0123456789' })).toEqual([
      { tenantId: 'alpha', apiKey: 'alpha-key-1-0123456789abcdef0123456789' },
      { tenantId: 'beta', apiKey: 'beta-key-1-0123456789abcdef0123456789' },
    ]);
    expect(
      seeds({
        SEED_TENANTS: 'alpha=alpha-key-1-0123456789abcdef0123456789,beta=beta-key-1-0123456789abcdef0123456789',
        SEED_HIGH_PRIORITY_TENANTS: 'beta',
      }),
    ).toEqual([
      { tenantId: 'alpha', apiKey: 'alpha-key-1-0123456789abcdef0123456789' },
      { tenantId: 'beta', apiKey: 'beta-key-1-0123456789abcdef0123456789', highPriority: true },
    ]);
    // Own tenants in dev: the demo default does not carry over to them.
    expect(seeds({ SEED_TENANTS: 'alpha=alpha-key-1-0123456789abcdef0123456789' }, 'dev')).toEqual([
      { tenantId: 'alpha', apiKey: 'alpha-key-1-0123456789abcdef0123456789' },
    ]);
    expect(() => seeds({ SEED_TENANTS: 'alpha=alpha-key-1-0123456789abcdef0123456789', SEED_HIGH_PRIORITY_TENANTS: 'gamma' })).toThrow(
      /SEED_HIGH_PRIORITY_TENANTS .*"gamma" is not one/,
    );
  });

  it('gives a stopping worker 20 s to drain by default (WORKER_SHUTDOWN_GRACE_SECONDS), 0-3600', () => {
    expect(loadConfig({}, { jobTypes: names, mode: 'production' }).workerShutdownGraceSeconds).toBe(20);
    expect(loadConfig({ WORKER_SHUTDOWN_GRACE_SECONDS: '45' }, { jobTypes: names }).workerShutdownGraceSeconds).toBe(45);
    expect(() => loadConfig({ WORKER_SHUTDOWN_GRACE_SECONDS: 'long' }, { jobTypes: names })).toThrow(
      /WORKER_SHUTDOWN_GRACE_SECONDS must be a number of seconds/,
    );
    expect(() => loadConfig({ WORKER_SHUTDOWN_GRACE_SECONDS: '-1' }, { jobTypes: names })).toThrow(
      /WORKER_SHUTDOWN_GRACE_SECONDS must be 0-3600/,
    );
  });

  it('seeds nothing and has no admin key by default in production', () => {
    const c = loadConfig({}, { jobTypes: names, mode: 'production' });
    expect(c.seedTenants).toEqual([]);
    expect(c.adminApiKey).toBeUndefined();
  });

  it('names the wrong variable and what is allowed', () => {
    expect(() => loadConfig({ HTTP_PORT: 'eighty' }, { jobTypes: names, mode: 'dev' })).toThrow(/HTTP_PORT must be a port number/);
    expect(() => loadConfig({ WORKERS: '99' }, { jobTypes: names, mode: 'dev' })).toThrow(/WORKERS must be 0-16/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' }, { jobTypes: names, mode: 'dev' })).toThrow(
      /DATABASE_URL must start with postgres/,
    );
    expect(() => loadConfig({ SEED_TENANTS: 'oops' }, { jobTypes: names, mode: 'dev' })).toThrow(/SEED_TENANTS/);
    expect(() => loadConfig({ WEBHOOK_SECRETS: 'sim=nope' }, { jobTypes: names, mode: 'dev' })).toThrow(/WEBHOOK_SECRETS/);
    expect(() => loadConfig({ JOB_BUDGETS: '{"nope":{}}' }, { jobTypes: names, mode: 'dev' })).toThrow(/JOB_BUDGETS/);
    expect(() => loadConfig({ CONCURRENCY_LIMITS: '{"summarize":{"perTenant":0}}' }, { jobTypes: names, mode: 'dev' })).toThrow(
      /CONCURRENCY_LIMITS/,
    );
    expect(() => loadConfig({ DURABLE_JOBS_MODE: 'staging' }, { jobTypes: names })).toThrow(/DURABLE_JOBS_MODE/);
  });

  it('treats empty variables as unset and parses rotation secrets and per-type limits', () => {
    const c = loadConfig(
      {
        HTTP_PORT: '',
        WEBHOOK_SECRETS: 'sim=whsec_aaaaaaaaaaaaaaaaaaaa|whsec_bbbbbbbbbbbbbbbbbbbb',
        CONCURRENCY_LIMITS: '{"summarize":{"perTenant":2}}',
        JOB_BUDGETS: '{"purchase":{"maximumAttempts":3}}',
      },
      { jobTypes: names, mode: 'dev' },
    );
    expect(c.httpPort).toBe(8080);
    expect(c.webhookSecrets.sim).toHaveLength(2);
    expect(c.concurrencyLimits.summarize).toEqual({ perTenant: 2 });
    // The registry applies the override over the type's own caps.
    expect(defaultJobRegistry.concurrencyLimits(c.concurrencyLimits).summarize).toEqual({ perTenant: 2, global: 32 });
    expect(c.jobBudgets).toEqual({ purchase: { maximumAttempts: 3 } });
  });

  describe('named operators (ADMIN_API_KEYS)', () => {
    const sha = (k: string) => createHash('sha256').update(k).digest('hex');
    const load = (env: Record<string, string>, mode: 'dev' | 'production' = 'production') => loadConfig(env, { jobTypes: names, mode });

    it('keeps only digests, several keys per operator, and ADMIN_API_KEY as operator "admin"', () => {
      const c = load({
        ADMIN_API_KEYS: `alice=alice-key-0000001-0123456789abcdef0123456789|sha256:${sha('alice-key-0000002-0123456789abcdef0123456789')},bob=bob-key-000000001-0123456789abcdef0123456789`,
        ADMIN_API_KEY: 'legacy-admin-key-0123456789abcdef0123456789',
      });
      expect(c.adminKeys).toEqual([
        { operator: 'alice', keyHash: sha('alice-key-0000001-0123456789abcdef0123456789') },
        { operator: 'alice', keyHash: sha('alice-key-0000002-0123456789abcdef0123456789') },
        { operator: 'bob', keyHash: sha('bob-key-000000001-0123456789abcdef0123456789') },
        { operator: 'admin', keyHash: sha('legacy-admin-key-0123456789abcdef0123456789') },
      ]);
      expect(JSON.stringify(c.adminKeys)).not.toContain('alice-key');
    });

    it('dev mode: admin-key names operator "admin" unless named keys are configured', () => {
      expect(load({}, 'dev').adminKeys).toEqual([{ operator: 'admin', keyHash: sha('admin-key') }]);
      const named = load({ ADMIN_API_KEYS: 'alice=alice-key-0000001-0123456789abcdef0123456789' }, 'dev');
      expect(named.adminKeys).toEqual([{ operator: 'alice', keyHash: sha('alice-key-0000001-0123456789abcdef0123456789') }]);
      expect(named.adminApiKey).toBeUndefined();
      expect(load({}).adminKeys).toEqual([]);
    });

    it('refuses ambiguous or weak entries, naming the variable', () => {
      expect(() => load({ ADMIN_API_KEYS: 'alice' })).toThrow(/ADMIN_API_KEYS must be "operator=key/);
      expect(() => load({ ADMIN_API_KEYS: 'al ice=alice-key-0000001-0123456789abcdef0123456789' })).toThrow(/ADMIN_API_KEYS must be/);
      expect(() => load({ ADMIN_API_KEYS: 'alice=short' })).toThrow(
        /ADMIN_API_KEYS: operator "alice": keys: each key must be at least 32 characters/,
      );
      expect(() =>
        load({ ADMIN_API_KEYS: 'alice=alice-key-0000001-0123456789abcdef0123456789,alice=alice-key-0000002-0123456789abcdef0123456789' }),
      ).toThrow(/listed twice/);
      expect(() =>
        load({ ADMIN_API_KEYS: 'alice=shared-key-0000001-0123456789abcdef0123456789,bob=shared-key-0000001-0123456789abcdef0123456789' }),
      ).toThrow(/both "alice" and "bob"/);
      expect(() =>
        load({
          ADMIN_API_KEYS: 'alice=demo-key-000000001-0123456789abcdef0123456789',
          SEED_TENANTS: 'demo=demo-key-000000001-0123456789abcdef0123456789',
        }),
      ).toThrow(/tenant "demo" is also an admin key/);
      expect(() => load({ TEMPORAL_UI_URL: 'javascript:alert(1)' })).toThrow(/TEMPORAL_UI_URL/);
    });

    it('links the Temporal Web UI: configured, or the dev server on TEMPORAL_UI_PORT', () => {
      expect(load({}, 'dev').temporalUiUrl).toBe('http://127.0.0.1:8233');
      expect(load({ TEMPORAL_UI_PORT: '9000' }, 'dev').temporalUiUrl).toBe('http://127.0.0.1:9000');
      expect(load({ TEMPORAL_UI_URL: 'https://temporal.example/' }).temporalUiUrl).toBe('https://temporal.example');
      expect(load({}).temporalUiUrl).toBeUndefined();
      expect(load({ TEMPORAL_UI_URL: 'none' }, 'dev').temporalUiUrl).toBeUndefined();
    });
  });
});
