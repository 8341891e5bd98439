// Replay requests recorded by earlier code must replay deterministically on today's bundle, so
// replay workflows running at an upgrade keep going: one recorded before the fast path (main at
// f067c0e: prepare and finish as activities, slot held to the finish) and one recorded with it
// (`patched('replay-fast-path')`). Recorded with test/fixtures/replay-workflow/record.mts.txt.
import { readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../support/harness.js';

const fixture = async (name: string) =>
  JSON.parse(await readFile(new URL(`../fixtures/replay-workflow/${name}.json`, import.meta.url), 'utf8')) as {
    workflowId: string;
    history: string;
  };

describe('replay workflow histories from earlier code', () => {
  it.each(['before-fast-path-f067c0e', 'fast-path'])('%s replays on the current bundle without a determinism error', async (name) => {
    const f = await fixture(name);
    const history = proto.temporal.api.history.v1.History.decode(Buffer.from(f.history, 'base64'));
    expect(history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('replayDeadLetters');
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, f.workflowId)).resolves.toBeUndefined();
  });
});
