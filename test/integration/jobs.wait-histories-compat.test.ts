// Jobs that waited, recorded by the code before a step returned its wait (`StepWait`, main at
// 34c58e7, with test/fixtures/waits/record.test.ts.txt): there each wait is an activity failure,
// `SlotWait` (a standard step, and a local one on the fast path) or `AdmissionWait` (the gate
// folded into the first step). They also took the branches of `patched()` markers that are now
// retired: job workflows are pinned (workers/versioning.ts), so a job waiting at a versioned
// deploy goes on on the build that started it (test/integration/workers.versioning.test.ts), and
// today's bundle must refuse its history with a determinism error, never take another path.
import { readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../support/harness.js';

interface Recorded {
  histories: Record<'slotWait' | 'slotWaitFastPath' | 'admissionWait', { workflowId: string; history: string }>;
}
const recorded: Recorded = JSON.parse(await readFile(new URL('../fixtures/waits/recorded-34c58e7.json', import.meta.url), 'utf8'));

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const failureTypes = (events: Event[]) =>
  events.flatMap((e) => {
    const f = e.activityTaskFailedEventAttributes?.failure ?? e.markerRecordedEventAttributes?.failure;
    return f?.applicationFailureInfo?.type ? [f.applicationFailureInfo.type] : [];
  });

describe('jobs that waited, recorded while a wait was an activity failure', () => {
  it.each([
    ['slotWait', 'summarizeJob', 'SlotWait'],
    ['slotWaitFastPath', 'summarizeJobLocal', 'SlotWait'],
    ['admissionWait', 'summarizeJob', 'AdmissionWait'],
  ] as const)(
    '%s is refused by the current bundle with a determinism error (it finishes on its own build)',
    async (name, workflowType, failure) => {
      const r = recorded.histories[name];
      const history = proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64'));
      const events = history.events ?? [];
      expect(events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe(workflowType);
      // What the fixture stands for: its waits are failures, and the job completed after them.
      expect(failureTypes(events).length).toBeGreaterThan(0);
      expect(failureTypes(events).every((t) => t === failure)).toBe(true);
      expect(events.at(-1)?.workflowExecutionCompletedEventAttributes).toBeTruthy();
      await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, r.workflowId)).rejects.toThrow(
        /nondeterminism/i,
      );
    },
  );
});
