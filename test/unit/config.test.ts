import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { loadConfig } from '../../lib/config.js';

const names = defaultJobRegistry.names;

describe('configuration', () => {
  it('has the documented defaults in dev mode', () => {
    const c = loadConfig({}, { jobTypes: names, mode: 'dev' });
    expect(c).toMatchObject({
      httpPort: 8080, temporalAddress: undefined, temporalNamespace: 'default', temporalUiPort: 8233,
      databaseUrl: undefined, providerUrl: undefined, simPort: 8090, workers: 1, adminApiKey: 'admin-key',
      simWebhookUrl: 'http://127.0.0.1:8080/v1/webhooks/sim', taskQueue: 'durable-jobs',
    });
    expect(c.seedTenants).toEqual([{ tenantId: 'demo', apiKey: 'demo-key' }]);
  });

  it('seeds nothing and has no admin key by default in production', () => {
    const c = loadConfig({}, { jobTypes: names, mode: 'production' });
    expect(c.seedTenants).toEqual([]);
    expect(c.adminApiKey).toBeUndefined();
  });

  it('names the wrong variable and what is allowed', () => {
    expect(() => loadConfig({ HTTP_PORT: 'eighty' }, { jobTypes: names, mode: 'dev' })).toThrow(/HTTP_PORT must be a port number/);
    expect(() => loadConfig({ WORKERS: '99' }, { jobTypes: names, mode: 'dev' })).toThrow(/WORKERS must be 0-16/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' }, { jobTypes: names, mode: 'dev' })).toThrow(/DATABASE_URL must start with postgres/);
    expect(() => loadConfig({ SEED_TENANTS: 'oops' }, { jobTypes: names, mode: 'dev' })).toThrow(/SEED_TENANTS/);
    expect(() => loadConfig({ WEBHOOK_SECRETS: 'sim=nope' }, { jobTypes: names, mode: 'dev' })).toThrow(/WEBHOOK_SECRETS/);
    expect(() => loadConfig({ JOB_BUDGETS: '{"nope":{}}' }, { jobTypes: names, mode: 'dev' })).toThrow(/JOB_BUDGETS/);
    expect(() => loadConfig({ CONCURRENCY_LIMITS: '{"summarize":{"perTenant":0}}' }, { jobTypes: names, mode: 'dev' })).toThrow(/CONCURRENCY_LIMITS/);
    expect(() => loadConfig({ DURABLE_JOBS_MODE: 'staging' }, { jobTypes: names })).toThrow(/DURABLE_JOBS_MODE/);
  });

  it('treats empty variables as unset and parses rotation secrets and per-type limits', () => {
    const c = loadConfig({
      HTTP_PORT: '', WEBHOOK_SECRETS: 'sim=whsec_aaaaaaaaaaaaaaaaaaaa|whsec_bbbbbbbbbbbbbbbbbbbb',
      CONCURRENCY_LIMITS: '{"summarize":{"perTenant":2}}', JOB_BUDGETS: '{"purchase":{"maximumAttempts":3}}',
    }, { jobTypes: names, mode: 'dev' });
    expect(c.httpPort).toBe(8080);
    expect(c.webhookSecrets.sim).toHaveLength(2);
    expect(c.concurrencyLimits.summarize).toEqual({ perTenant: 2 });
    // The registry applies the override over the type's own caps.
    expect(defaultJobRegistry.concurrencyLimits(c.concurrencyLimits).summarize).toEqual({ perTenant: 2, global: 32 });
    expect(c.jobBudgets).toEqual({ purchase: { maximumAttempts: 3 } });
  });
});
