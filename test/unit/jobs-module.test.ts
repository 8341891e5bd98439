import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJobRegistry, registryFromExports } from '../../job-api/load.js';
import { builtInJobTypes, defaultJobRegistry } from '../../jobs/index.js';
import { ConfigError } from '../../lib/errors.js';
import { queuesFor } from '../../workers/durable-worker.js';
import { unpolledJobTypes } from '../../services/queue-health.js';
import { createJobRegistry } from '../../job-api/registry.js';
import { reserveAndConfirmJobType } from '../fixtures/jobs/reserve-and-confirm/activities.js';
import { jobType } from '../../job-api/registry.js';
import { defineJob } from '../../job-api/define.js';
import { z } from 'zod';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'jobs-module-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the --jobs module', () => {
  it('takes a registry or an array of job types as default, jobs or registry', () => {
    expect(registryFromExports({ default: defaultJobRegistry }, 'm.ts')).toBe(defaultJobRegistry);
    expect(registryFromExports({ jobs: builtInJobTypes }, 'm.ts').names).toEqual(defaultJobRegistry.names);
    expect(registryFromExports({ registry: defaultJobRegistry }, 'm.ts')).toBe(defaultJobRegistry);
  });

  it('names the module and what it found when there is no registry', () => {
    const err = (() => {
      try {
        registryFromExports({ default: { hello: 1 }, other: 2 }, 'src/jobs.ts');
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.message).toContain('jobs module src/jobs.ts exports no job registry');
    expect(err!.message).toContain('"default" is an object with keys hello');
    expect(err!.message).toContain('other exports: other');
  });

  it('names a type registered twice', () => {
    expect(() => registryFromExports({ jobs: [...builtInJobTypes, builtInJobTypes[0]!] }, 'src/jobs.ts')).toThrow(
      'jobs module src/jobs.ts: export "jobs": job type summarize is registered twice',
    );
  });

  it('loads a module file and refuses a missing one', async () => {
    const file = path.join(dir, 'jobs.mjs');
    await writeFile(file, 'export const notJobs = 1;\n');
    await expect(loadJobRegistry(file)).rejects.toThrow(/exports no job registry.*other exports: notJobs/);
    await expect(loadJobRegistry(path.join(dir, 'nope.ts'))).rejects.toThrow(/jobs module .*nope\.ts not found/);
  });
});

describe('the task queues a worker polls', () => {
  const own = jobType(
    defineJob({
      name: 'own-queue',
      workflowType: 'ownQueueJob',
      description: 'x',
      input: z.object({}),
      effects: ['a'],
      taskQueue: 'team-q',
    }),
    { workflows: new URL('../fixtures/jobs/reserve-and-confirm/workflow.ts', import.meta.url), activities: () => ({}) },
  );
  it('the shared queue when a type needs it or the worker runs the system workflows, then each own queue', () => {
    expect(queuesFor(createJobRegistry([own]), 'shared', true)).toEqual(['shared', 'team-q']);
    expect(queuesFor(createJobRegistry([own]), 'shared', false)).toEqual(['team-q']);
    expect(queuesFor(createJobRegistry([own, reserveAndConfirmJobType]), 'shared', false)).toEqual(['shared', 'team-q']);
    expect(queuesFor(defaultJobRegistry, 'shared', false)).toEqual(['shared']);
  });
  it('refuses a task queue name Temporal would not take', () => {
    expect(() =>
      defineJob({
        name: 'bad-queue',
        workflowType: 'badQueueJob',
        description: 'x',
        input: z.object({}),
        effects: ['a'],
        taskQueue: 'a b',
      }),
    ).toThrow(/taskQueue "a b" must be/);
  });
});

describe('queue health names a job type nobody polls', () => {
  const stats = (pollers: number) => ({ backlogCount: 1, backlogAgeSeconds: 5, addRatePerSecond: 0, dispatchRatePerSecond: 0, pollers });
  it('a type whose queue has no workflow or activity poller; never one Temporal was not asked about', () => {
    const queues = [
      { name: 'shared', workflow: stats(2), activity: stats(2) },
      { name: 'team-q', workflow: stats(0), activity: stats(0) },
      { name: 'half', workflow: stats(1), activity: stats(0) },
      { name: 'unknown', workflow: null, activity: null },
    ];
    expect(unpolledJobTypes(queues, { summarize: 'shared', invoice: 'team-q', report: 'half', other: 'unknown', lost: 'absent' })).toEqual([
      { jobType: 'invoice', taskQueue: 'team-q', words: 'no worker polls task queue team-q for job type invoice' },
      { jobType: 'report', taskQueue: 'half', words: 'no worker polls task queue half for job type report' },
    ]);
  });
});
