// The engine's baselines, bundled on their own (never part of workflows/index.ts) and run by
// their own workers on their own task queues, with the same worker settings as the product's:
//  - bareWorkflow: one no-op activity (the engine's floor);
//  - twinWorkflow: shaped like `summarize` (started with the same search attributes, summary,
//    details and ID policies by the bench): a no-op local activity (the admission gate's place:
//    the product's gate is a local activity), JobState=running upsert, an activity with the
//    step's heartbeat timeout that heartbeats at once and makes the same upstream call,
//    JobState=succeeded upsert, complete.
//    No Postgres: product ÷ twin is our own cost, twin ÷ bare the cost of the Temporal shape.
import { defineSearchAttributeKey } from '@temporalio/common';
import { proxyActivities, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { BareActivities, BareCall } from './bare-activities.js';

const JobState = defineSearchAttributeKey('JobState', 'KEYWORD');

const { bareActivity } = proxyActivities<BareActivities>({
  // Long enough for the memory baseline's held activities; a bare run never comes close.
  startToCloseTimeout: '15 minutes',
});
// The gate's options (BOOKKEEPING_OPTIONS' timeout) as a local activity, like workflows/admission.ts.
const gate = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });
const { bareCall } = proxyActivities<BareActivities>({
  // Long enough for the memory twin's held calls (they heartbeat); a throughput call takes milliseconds.
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10 seconds',
});

export async function bareWorkflow(holdMs = 0): Promise<void> {
  await bareActivity(holdMs);
}

export async function twinWorkflow(call: BareCall): Promise<unknown> {
  await gate.bareActivity(0);
  upsertSearchAttributes([{ key: JobState, value: 'running' }]);
  const out = await bareCall(call);
  upsertSearchAttributes([{ key: JobState, value: 'succeeded' }]);
  return out;
}
