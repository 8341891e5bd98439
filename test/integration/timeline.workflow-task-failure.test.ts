// Engine-side states the stage verdict names (issue 40 §5) instead of "waiting at claim" or
// "retrying": a job whose workflow the worker on its queue cannot run (a worker without its job
// type on the shared queue), so the engine fails its workflow task again and again; and a job
// whose step activity an operator paused in Temporal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { createJobsClient } from '../../services/intake.js';
import { reserveAndConfirmJobType } from '../fixtures/jobs/reserve-and-confirm/activities.js';
import { operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  // The harness's workers run the shipped types only.
  h = await startHarness('wft-failure');
});
afterAll(async () => {
  await h?.close();
});

describe('a workflow task that keeps failing', () => {
  it('is the verdict: which workflow, on which worker, how often, and what to do', async () => {
    // A client that knows one more type than the workers on the queue it starts it on.
    const client = createJobsClient({
      pool: h.pool,
      temporal: h.temporal,
      taskQueue: h.taskQueue,
      jobs: createJobRegistry([...builtInJobTypes, reserveAndConfirmJobType]),
    });
    try {
      const { jobId } = await client.submitJob({
        tenantId: TENANTS.a.id,
        type: 'reserve-and-confirm',
        idempotencyKey: `wft-${uid()}`,
        input: { sku: 'SKU-9', quantity: 1, customerEmail: 'wft@example.com' },
      });
      let verdict: { stage: string; condition: string; words: string; nextStep: string } | undefined;
      const deadline = Date.now() + 90_000;
      while (Date.now() < deadline) {
        const t = await h.api(`/v1/admin/jobs/${jobId}/timeline`, {
          tenant: null,
          headers: { authorization: `Bearer ${operatorKey('dana')}` },
        });
        verdict = t.body.verdict;
        if (verdict?.words.includes('workflow task')) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(verdict).toMatchObject({ stage: 'claim', condition: 'stuck' });
      expect(verdict!.words).toMatch(
        /^stuck at claim: the workflow task of workflow reserveAndConfirmJob \(job type reserve-and-confirm\) fails on worker \S+, \d+ time\(s\): /,
      );
      expect(verdict!.nextStep).toContain('without job type reserve-and-confirm');
    } finally {
      await client.close();
    }
  });
});

describe('an activity paused in Temporal', () => {
  const verdictOf = async (jobId: string) =>
    (
      await h.api(`/v1/admin/jobs/${jobId}/timeline`, {
        tenant: null,
        headers: { authorization: `Bearer ${operatorKey('dana')}` },
      })
    ).body.verdict as { stage: string; condition: string; words: string; nextStep: string };

  it('is the verdict, with who paused it and why; unpaused, the step runs and the job succeeds', async () => {
    // The first call is refused with a long Retry-After: the step waits to retry, pending in Temporal.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '120' });
    const r = await h.submit('summarize', { text: 'An operator pauses this step in Temporal.' });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'retrying');
    const handle = h.temporal.workflow.getHandle(jobId);
    const pending = await waitFor('the pending step activity', async () => (await handle.describe()).raw.pendingActivities?.[0]);
    const execution = { workflowId: jobId };
    const namespace = h.temporal.options.namespace;
    await h.temporal.workflowService.pauseActivity({
      namespace,
      execution,
      id: pending.activityId!,
      identity: 'ops-dana',
      reason: 'upstream asked us to hold',
    });
    const paused = await waitFor('the paused verdict', async () => {
      const v = await verdictOf(jobId);
      return v.words.startsWith('paused') ? v : undefined;
    });
    expect(paused).toMatchObject({ stage: 'side_effects', condition: 'waiting' });
    expect(paused.words).toMatch(
      new RegExp(
        `^paused at side effects: activity ${pending.activityType!.name} is paused in Temporal by ops-dana since .+ \\(upstream asked us to hold\\), attempt \\d+$`,
      ),
    );
    expect(paused.nextStep).toContain('temporal activity unpause');

    await h.temporal.workflowService.unpauseActivity({ namespace, execution, id: pending.activityId!, identity: 'ops-dana' });
    await h.waitForStatus(jobId, 'succeeded');
    expect((await verdictOf(jobId)).words).not.toMatch(/paused/);
  });
});
