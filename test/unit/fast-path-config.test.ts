import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineJob } from '../../job-api/define.js';
import { createJobRegistry, jobType } from '../../job-api/registry.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { loadConfig } from '../../lib/config.js';
import { onStartPath } from '../../services/start-job.js';

const opts = { jobTypes: defaultJobRegistry.names, fastPathTypes: defaultJobRegistry.fastPathTypes, mode: 'dev' as const };

describe('the fast path: FAST_PATH_JOB_TYPES and fastPath', () => {
  it('is off by default and names only registered types that declare a fast path', () => {
    expect([...loadConfig({}, opts).fastPathTypes]).toEqual([]);
    expect(defaultJobRegistry.fastPathTypes).toEqual(['summarize']);
    expect([...loadConfig({ FAST_PATH_JOB_TYPES: ' summarize, ' }, opts).fastPathTypes]).toEqual(['summarize']);
    expect(() => loadConfig({ FAST_PATH_JOB_TYPES: 'nope' }, opts)).toThrow(/FAST_PATH_JOB_TYPES: "nope" is not a job type/);
    expect(() => loadConfig({ FAST_PATH_JOB_TYPES: 'purchase' }, opts)).toThrow(
      /FAST_PATH_JOB_TYPES: job type purchase declares no fast path \(types with one: summarize\)/,
    );
  });

  it('starts a named type under its fast-path workflow type and every other under its own', () => {
    const summarize = defaultJobRegistry.require('summarize');
    const on = new Set(['summarize']);
    expect(onStartPath(summarize, on).workflowType).toBe('summarizeJobLocal');
    expect(onStartPath(summarize, new Set()).workflowType).toBe('summarizeJob');
    expect(onStartPath(summarize, undefined)).toBe(summarize);
    expect(onStartPath(defaultJobRegistry.require('purchase'), new Set(['purchase'])).workflowType).toBe('purchaseJob');
  });

  it('refuses a fast path that reuses a workflow type or an upstream that is not idempotent by key', () => {
    const base = { name: 'thing', workflowType: 'thingJob', description: 'a thing', input: z.object({}), effects: ['call'] as const };
    expect(() => defineJob({ ...base, fastPath: { workflowType: 'thingJob' } })).toThrow(/must be the name of another exported function/);
    expect(() => defineJob({ ...base, fastPath: { workflowType: 'thingJobLocal' }, upstream: { idempotentByKey: false } })).toThrow(
      /must be idempotent by key/,
    );
    const taken = defineJob({ ...base, fastPath: { workflowType: 'summarizeJob' } });
    const worker = { workflows: '/nowhere.ts', activities: () => ({}) };
    expect(() => createJobRegistry([...defaultJobRegistry.modules, jobType(taken, worker)])).toThrow(
      /workflow type summarizeJob \(its fast path\) is already taken/,
    );
  });
});
