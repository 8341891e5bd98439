// A job whose workflow the worker on its queue cannot run (a worker without its job type on the
// shared queue): the engine fails its workflow task again and again. The verdict names it, with
// the worker and the way out, instead of "waiting at claim".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { createJobsClient } from '../../services/intake.js';
import { reserveAndConfirmJobType } from '../fixtures/jobs/reserve-and-confirm/activities.js';
import { operatorKey, startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

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
