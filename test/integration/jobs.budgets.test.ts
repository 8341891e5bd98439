import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startJobWorkflow } from '../../services/start-job.js';
import { startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('budgets', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

/** The arguments a workflow was started with, as recorded in its history. */
async function startArgs(workflowId: string): Promise<any> {
  const history = await h.temporal.workflow.getHandle(workflowId).fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return JSON.parse(Buffer.from(payload!.data!).toString('utf8'));
}

describe('JOB_BUDGETS reaches every job, however it was started', () => {
  it('carries the deployment budget override in the workflow arguments, and keeps an explicit one', async () => {
    const budgets = { summarize: { maximumAttempts: 3, scheduleToCloseTimeoutMs: 60_000 } };
    const jobId = `job-budget-${uid()}`;
    expect(
      await startJobWorkflow(
        h.temporal,
        h.taskQueue,
        defaultJobRegistry.require('summarize'),
        { jobId, tenantId: 'tenant-a', jobType: 'summarize', priority: 'normal' },
        budgets,
      ),
    ).toBe(true);
    expect((await startArgs(jobId)).budget).toEqual(budgets.summarize);

    const explicit = `job-budget-${uid()}`;
    await startJobWorkflow(
      h.temporal,
      h.taskQueue,
      defaultJobRegistry.require('summarize'),
      { jobId: explicit, tenantId: 'tenant-a', jobType: 'summarize', priority: 'normal', budget: { maximumAttempts: 1 } },
      budgets,
    );
    expect((await startArgs(explicit)).budget).toEqual({ maximumAttempts: 1 });

    const other = `job-budget-${uid()}`;
    await startJobWorkflow(
      h.temporal,
      h.taskQueue,
      defaultJobRegistry.require('purchase'),
      { jobId: other, tenantId: 'tenant-a', jobType: 'purchase', priority: 'normal' },
      budgets,
    );
    expect((await startArgs(other)).budget).toBeUndefined();
    // A second start of the same running job attaches to it (USE_EXISTING) and reports true.
    expect(
      await startJobWorkflow(
        h.temporal,
        h.taskQueue,
        defaultJobRegistry.require('summarize'),
        { jobId, tenantId: 'tenant-a', jobType: 'summarize', priority: 'normal' },
        budgets,
      ),
    ).toBe(true);
    for (const id of [jobId, explicit, other]) await h.temporal.workflow.getHandle(id).terminate('test done');
    // A closed run is never started again (REJECT_DUPLICATE): false.
    expect(
      await startJobWorkflow(
        h.temporal,
        h.taskQueue,
        defaultJobRegistry.require('summarize'),
        { jobId, tenantId: 'tenant-a', jobType: 'summarize', priority: 'normal' },
        budgets,
      ),
    ).toBe(false);
  });
});
