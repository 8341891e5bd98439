// The engine's baseline: a bare Temporal workflow with one no-op activity. Bundled on its own
// (never part of workflows/index.ts) and run by its own worker on its own task queue, with the
// same worker settings as the product's worker.
import { proxyActivities } from '@temporalio/workflow';
import type { BareActivities } from './bare-activities.js';

const { bareActivity } = proxyActivities<BareActivities>({
  // Long enough for the memory baseline's held activities; a bare run never comes close.
  startToCloseTimeout: '15 minutes',
});

export async function bareWorkflow(holdMs = 0): Promise<void> {
  await bareActivity(holdMs);
}
