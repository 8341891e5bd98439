import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { RETENTION_TABLES } from '../../contract/retention.js';

const load = (env: Record<string, string>) => loadConfig(env, { jobTypes: ['summarize'], mode: 'dev' }).retention;

describe('retention configuration', () => {
  it('defaults: 30 days, samples 1, audit 365, a 7-day idempotency window, batches of 500', () => {
    const r = load({});
    expect(Object.keys(r.days).sort()).toEqual([...RETENTION_TABLES].sort());
    expect(r).toMatchObject({
      idempotencyWindowDays: 7,
      batchSize: 500,
      days: { job_intents: 30, effects: 30, outbox: 30, health_samples: 1, degradation_audit: 365, concurrency_leases: 1 },
    });
  });

  it('takes per-table overrides, and never keeps finished intents shorter than the idempotency window', () => {
    expect(load({ RETENTION_DAYS: '10', RETENTION_DAYS_BY_TABLE: '{"job_attempts": 3}' }).days).toMatchObject({
      job_attempts: 3,
      effects: 10,
      job_intents: 10,
    });
    expect(load({ RETENTION_DAYS: '2', IDEMPOTENCY_WINDOW_DAYS: '5' }).days).toMatchObject({ job_intents: 5, effects: 2 });
    expect(() => load({ RETENTION_DAYS_BY_TABLE: '{"job_intents": 3}' })).toThrow(/job_intents .* at least IDEMPOTENCY_WINDOW_DAYS/);
    expect(() => load({ RETENTION_DAYS_BY_TABLE: '{"dead_letters": 3}' })).toThrow(/RETENTION_DAYS_BY_TABLE/);
    expect(() => load({ RETENTION_DAYS_BY_TABLE: 'nope' })).toThrow(/JSON object/);
    expect(() => load({ RETENTION_BATCH_SIZE: '0' })).toThrow(/RETENTION_BATCH_SIZE/);
  });
});
