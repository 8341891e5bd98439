// The engine's baselines, bundled on their own (never part of workflows/index.ts) and run by
// their own workers on their own task queues, with the same worker settings as the product's:
//  - bareWorkflow: one no-op activity (the engine's floor);
//  - twinWorkflow: shaped like `summarize` (started with the same search attributes, summary,
//    details and ID policies by the bench): JobState=running upsert, an activity with the
//    step's heartbeat timeout that heartbeats at once and makes the same upstream call,
//    JobState=succeeded upsert, complete. No gate of its own: the product asks the degradation
//    gate's question in the step's first statement (runJob's `admitInFirstStep`).
//    No Postgres: product ÷ twin is our own cost, twin ÷ bare the cost of the Temporal shape.
//  - replayTwinWorkflow: shaped like the dead-letter replay's fast path (workflows/replay.ts,
//    replay-one.ts) with no Postgres: for each item, with at most `concurrency` in flight, a no-op
//    local activity (the prepare's place), a child `twinWorkflow` started with the replay job's
//    search attributes and policies, its slot freed when the child ends, then a no-op local
//    activity (the finish's place). Replay ÷ this twin is our own cost; this twin ÷ the cap's rate
//    what the engine's path for one child job costs on this server.
import { defineSearchAttributeKey } from '@temporalio/common';
import {
  condition,
  ParentClosePolicy,
  proxyActivities,
  proxyLocalActivities,
  startChild,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { BareActivities, BareCall } from './bare-activities.js';

const JobState = defineSearchAttributeKey('JobState', 'KEYWORD');
const TenantId = defineSearchAttributeKey('TenantId', 'KEYWORD');
const JobType = defineSearchAttributeKey('JobType', 'KEYWORD');

const { bareActivity } = proxyActivities<BareActivities>({
  // Long enough for the memory baseline's held activities; a bare run never comes close.
  startToCloseTimeout: '15 minutes',
});
const { bareCall } = proxyActivities<BareActivities>({
  // Long enough for the memory twin's held calls (they heartbeat); a throughput call takes milliseconds.
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10 seconds',
});

// The replay's prepare and finish are local activities (workflows/replay-one.ts): the same options' timeout.
const bookkeeping = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });

export async function bareWorkflow(holdMs = 0): Promise<void> {
  await bareActivity(holdMs);
}

export async function twinWorkflow(call: BareCall): Promise<unknown> {
  upsertSearchAttributes([{ key: JobState, value: 'running' }]);
  const out = await bareCall(call);
  upsertSearchAttributes([{ key: JobState, value: 'succeeded' }]);
  return out;
}

export interface ReplayTwinArgs {
  /** The child workflow IDs, one per item (also each call's Idempotency-Key). */
  ids: string[];
  concurrency: number;
  providerUrl: string;
  tenantId: string;
  text: string;
}

/** Each item's start and finish, in workflow time (ms), as the replay's progress records them. */
export interface ReplayTwinResult {
  items: Array<{ startedAt: number; finishedAt: number }>;
  peakRunning: number;
}

export async function replayTwinWorkflow(a: ReplayTwinArgs): Promise<ReplayTwinResult> {
  const items: ReplayTwinResult['items'] = [];
  let running = 0;
  let peakRunning = 0;
  const one = async (id: string): Promise<void> => {
    const startedAt = Date.now();
    let holding = true;
    try {
      await bookkeeping.bareActivity(0);
      const child = await startChild(twinWorkflow, {
        workflowId: id,
        args: [{ providerUrl: a.providerUrl, key: id, text: a.text }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: TenantId, value: a.tenantId },
          { key: JobType, value: 'summarize' },
          { key: JobState, value: 'queued' },
        ],
        staticSummary: `replay twin ${id}`,
      });
      await child.result();
      running--;
      holding = false;
      await bookkeeping.bareActivity(0);
    } finally {
      if (holding) running--;
      items.push({ startedAt, finishedAt: Date.now() });
    }
  };
  const runs: Array<Promise<void>> = [];
  for (const id of a.ids) {
    await condition(() => running < a.concurrency);
    running++;
    peakRunning = Math.max(peakRunning, running);
    runs.push(one(id));
  }
  await Promise.all(runs);
  return { items, peakRunning };
}
