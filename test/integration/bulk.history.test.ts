// Bulk-action histories recorded by earlier code must replay deterministically on today's
// bundle, so bulk actions running at an upgrade keep going. Recorded by bulk.control.test.ts
// with RECORD_BULK_HISTORY=1 (a cancel paused, resumed and stopped mid-run).
import { readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../support/harness.js';

const fixture = async (name: string) =>
  JSON.parse(await readFile(new URL(`../fixtures/bulk-action/${name}.json`, import.meta.url), 'utf8')) as {
    workflowId: string;
    history: string;
  };

describe('bulk-action workflow histories from earlier code', () => {
  it.each(['steered'])('%s replays on the current bundle without a determinism error', async (name) => {
    const f = await fixture(name);
    const history = proto.temporal.api.history.v1.History.decode(Buffer.from(f.history, 'base64'));
    expect(history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('bulkAction');
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, f.workflowId)).resolves.toBeUndefined();
  });
});
