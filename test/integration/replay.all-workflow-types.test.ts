// The replay safety net: one recorded history of every workflow type the worker's bundle holds
// (each job type's, its fast-path one, and the system workflows), replayed on today's bundle. A
// workflow change that would break the runs in flight at a deploy fails here, not in production;
// a new workflow type fails here until it has a history (`npm run histories:record`, which runs
// the suite files that exercise every type and keeps one completed history of each:
// scripts/lib/record-histories.ts).
import { readdir, readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import type { RecordedHistory } from '../../scripts/lib/record-histories.js';
import * as systemWorkflows from '../../workflows/index.js';
import { workflowBundle } from '../support/harness.js';

const DIR = new URL('../fixtures/histories/', import.meta.url);
const recorded: RecordedHistory[] = await Promise.all(
  (await readdir(DIR))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map(async (f) => JSON.parse(await readFile(new URL(f, DIR), 'utf8')) as RecordedHistory),
);

/** Every workflow type a worker with the shipped registry registers. */
const bundledTypes = [
  ...Object.keys(systemWorkflows),
  ...defaultJobRegistry.modules.flatMap((m) => [
    m.definition.workflowType,
    ...(m.definition.fastPathWorkflowType ? [m.definition.fastPathWorkflowType] : []),
  ]),
].sort();

describe('recorded histories of every workflow type', () => {
  it('has one for each workflow type in the bundle', () => {
    const have = new Set(recorded.map((r) => r.workflowType));
    expect(
      bundledTypes.filter((t) => !have.has(t)),
      'workflow types without a recorded history (npm run histories:record)',
    ).toEqual([]);
  });

  it.each(recorded.map((r) => [r.workflowType, r] as const))('%s replays on the current bundle', async (type, r) => {
    const history = proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64'));
    const events = history.events ?? [];
    expect(events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe(type);
    expect(events.at(-1)?.workflowExecutionCompletedEventAttributes, 'a completed run').toBeTruthy();
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, r.workflowId)).resolves.toBeUndefined();
  });
});
