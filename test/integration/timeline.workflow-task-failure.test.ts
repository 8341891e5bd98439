// Engine-side states the stage verdict names (issue 40 §5) instead of "waiting at claim" or
// "retrying": a job whose workflow the worker on its queue cannot run (a worker without its job
// type on the shared queue), so the engine fails its workflow task again and again; and a job
// whose step activity an operator paused in Temporal.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { createJobsClient } from '../../services/intake.js';
import { temporalSide } from '../../services/timeline-temporal.js';
import { reserveAndConfirmJobType } from '../fixtures/jobs/reserve-and-confirm/activities.js';
import { operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
/** GET /v1/jobs/{id} over HTTP until its `engine` names this kind (an answer is reused for 2 s). */
const engineOf = (jobId: string, kind: string) =>
  waitFor(`GET /v1/jobs/${jobId} to name ${kind}`, async () => {
    const r = await h.api(`/v1/jobs/${jobId}`);
    expect(r.status).toBe(200);
    return r.body.engine?.kind === kind ? r.body : undefined;
  });
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

      // The tenant's status names it too: the failing build, the failure's first line, no worker identity.
      const status = await engineOf(jobId, 'workflow-task-failing');
      expect(status.status).toBe('queued');
      expect(status.engine).toEqual({
        kind: 'workflow-task-failing',
        buildId: 'test',
        message: expect.stringMatching(
          /^the engine cannot run this job's workflow code: its task failed \d+ times on build test \(.+\); the job waits and resumes where it stopped once the workers are fixed$/,
        ),
      });
      expect(status.engine.message).toContain('reserveAndConfirmJob');
      expect(status.engine.message).not.toMatch(/\n|\s+at /);
      expect(status.engine.message.length).toBeLessThan(400);
      expect(JSON.stringify(status)).not.toContain('wft-failure-worker');
      expect(JSON.stringify(status)).not.toContain(h.taskQueue);
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
    // The tenant sees that a step is paused and since when; not who paused it, nor their note.
    const status = await engineOf(jobId, 'activity-paused');
    expect(status.status).toBe('retrying');
    expect(status.engine).toEqual({
      kind: 'activity-paused',
      since: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.+Z$/),
      message:
        'a step of this job is paused in the engine by an operator; it resumes when they unpause it (no attempt is spent while paused)',
    });
    expect(JSON.stringify(status)).not.toMatch(/ops-dana|upstream asked us to hold/);

    await h.temporal.workflowService.unpauseActivity({ namespace, execution, id: pending.activityId!, identity: 'ops-dana' });
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.engine).toBeUndefined();
    expect((await verdictOf(jobId)).words).not.toMatch(/paused/);
  });
});

describe('GET /v1/jobs/{id} and Temporal', () => {
  /** A jobs client whose Temporal client counts what is asked of it. */
  const countingClient = (temporal: Client, engineCheckTimeoutMs?: number) => {
    const asked: string[] = [];
    const counting = new Proxy(temporal, {
      get(target, p, receiver) {
        if (p === 'workflow' || p === 'workflowService') asked.push(String(p));
        return Reflect.get(target, p, receiver);
      },
    });
    const client = createJobsClient({
      pool: h.pool,
      temporal: counting,
      taskQueue: h.taskQueue,
      jobs: createJobRegistry(builtInJobTypes),
      ...(engineCheckTimeoutMs ? { engineCheckTimeoutMs } : {}),
    });
    return { client, asked };
  };

  it('asks Temporal only while the job is unfinished; a Temporal that does not answer costs the field, not the answer', async () => {
    const done = await h.submit('summarize', { text: 'Finished: its status is Postgres only.' });
    const finished = await h.waitForStatus(done.body.jobId, 'succeeded');
    expect(finished.engine).toBeUndefined();
    const real = countingClient(h.temporal);
    try {
      const s = await real.client.getJob(TENANTS.a.id, done.body.jobId);
      expect(s.status).toBe('succeeded');
      expect(s.engine).toBeUndefined();
      expect(real.asked).toEqual([]);

      // Retrying after a long Retry-After: unfinished, so Temporal is asked, and nothing holds it there.
      await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '120' });
      const r = await h.submit('summarize', { text: 'Retrying: its status asks Temporal.' });
      await h.waitForStatus(r.body.jobId, 'retrying');
      const retrying = await real.client.getJob(TENANTS.a.id, r.body.jobId);
      expect(retrying.engine).toBeUndefined();
      expect(real.asked.length).toBeGreaterThan(0);

      // A Temporal that never answers: the status comes without the field, within the deadline.
      const hanging = {
        options: h.temporal.options,
        connection: { withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn() },
        workflow: { getHandle: () => ({ describe: () => new Promise(() => undefined) }) },
        workflowService: {},
      } as unknown as Client;
      const stuck = countingClient(hanging, 300);
      try {
        const t0 = Date.now();
        const s2 = await stuck.client.getJob(TENANTS.a.id, r.body.jobId);
        expect(Date.now() - t0).toBeLessThan(3_000);
        expect(s2).toMatchObject({ jobId: r.body.jobId, status: 'retrying' });
        expect(s2.engine).toBeUndefined();
        expect(stuck.asked).toContain('workflow');
      } finally {
        await stuck.client.close();
      }
    } finally {
      await real.client.close();
    }
  });
});

describe('a long history', () => {
  it('is read page by page: its first events forwards, its newest backwards, and the gap between them named', async () => {
    const r = await h.submit('summarize', { text: 'A history read in small pages.' });
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');
    const whole = (await h.temporal.workflow.getHandle(jobId).fetchHistory()).events!;
    expect(whole.length).toBeGreaterThan(12);
    const deps = { pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue };

    const all = await temporalSide({ ...deps, historyWindow: { head: 1_000, tail: 300, pageSize: 3 } }, jobId);
    expect(all.info).toMatchObject({ status: 'COMPLETED', historyEvents: whole.length });
    expect(all.info.historyEventsOmitted).toBeUndefined();
    expect(all.events.some((e) => e.kind === 'HistoryGap')).toBe(false);

    const part = await temporalSide({ ...deps, historyWindow: { head: 6, tail: 4, pageSize: 3 } }, jobId);
    const omitted = whole.length - 10;
    expect(part.info).toMatchObject({ historyEvents: whole.length, historyEventsOmitted: omitted });
    const kinds = part.events.filter((e) => e.kind !== 'PendingActivity').map((e) => e.kind);
    expect(kinds).toHaveLength(11); // 6 + the gap + 4
    expect(kinds[0]).toBe('WorkflowExecutionStarted');
    expect(kinds.at(-1)).toBe('WorkflowExecutionCompleted');
    const gap = part.events.find((e) => e.kind === 'HistoryGap')!;
    expect(gap).toMatchObject({ event: `${omitted} history events not read` });
    expect(gap.detail).toContain(`events 7 to ${6 + omitted}`);
    // Small pages reach the newest events backwards; one big page brings them all at once: the same window.
    const onePage = await temporalSide({ ...deps, historyWindow: { head: 6, tail: 4, pageSize: 1_000 } }, jobId);
    expect(onePage.events.filter((e) => e.kind !== 'PendingActivity')).toEqual(part.events.filter((e) => e.kind !== 'PendingActivity'));
  });
});
