import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepWaitOf } from '../../contract/job-types.js';
import { JobStateKey } from '../../lib/temporal.js';
import { attemptsForJob } from '../../store/attempts.js';
import { ADMIN_KEY, startHarness, waitFor, type Harness } from '../support/harness.js';

// The degradation gate folded into a job's first step (runJob's `admitInFirstStep`, which the
// shipped types set on their standard path): the step's first statement asks whether the job is
// admitted at once, so such a job runs no gate activity and no statement for it. A job that is
// not admitted comes back from that step with nothing written and goes through the gate as before.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('gate-in-step');
});
afterAll(async () => {
  await h?.close();
});

const degradation = (pausedPriorities: string[]) =>
  h.api('/v1/admin/degradation', {
    method: 'PUT',
    tenant: null,
    body: { pausedPriorities, reason: 'gate-in-step test' },
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });

async function historyOf(jobId: string) {
  return (await h.temporal.workflow.getHandle(jobId).fetchHistory()).events ?? [];
}
const markerNames = (events: Awaited<ReturnType<typeof historyOf>>) =>
  events.flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes.markerName] : []));

async function evidence(jobId: string) {
  const [leases, effects, intent] = await Promise.all([
    h.pool.query('SELECT attempt, step, outcome FROM activity_leases WHERE job_id = $1 ORDER BY attempt', [jobId]),
    h.pool.query('SELECT effect_key FROM effects WHERE job_id = $1', [jobId]),
    h.pool.query('SELECT status, attempts, first_started_at FROM job_intents WHERE job_id = $1', [jobId]),
  ]);
  return { leases: leases.rows, effects: effects.rows, intent: intent.rows[0], attempts: await attemptsForJob(h.pool, jobId) };
}

describe('the degradation gate asked in the first step', () => {
  it('admits a job at once without a gate activity: its history holds no local activity and no patch marker', async () => {
    const r = await h.submit('summarize', { text: 'Admitted at its first statement.' });
    expect(r.status).toBe(202);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.attempts).toBe(1);
    await h.temporal.workflow.getHandle(r.body.jobId).result();
    // Before the fold the gate's local activity left a `core_local_activity` marker here.
    const markers = markerNames(await historyOf(r.body.jobId));
    // And no `core_patch` marker: the lifecycle's patches are retired (job workflows are pinned, workers/versioning.ts).
    expect(markers).toEqual([]);
    const e = await evidence(r.body.jobId);
    expect(e.leases).toEqual([{ attempt: 1, step: 'summarize', outcome: 'completed' }]);
    expect(e.attempts.map((a) => [a.attempt, a.step, a.outcome])).toEqual([[1, 'summarize', 'succeeded']]);
  });

  it('stops a job of a paused priority at its first statement with nothing written, defers it in the gate, and runs it once resumed', async () => {
    expect((await degradation(['low'])).status).toBe(200);
    let jobId = '';
    try {
      jobId = (await h.submit('summarize', { text: 'Paused at its first statement.' }, { priority: 'low' })).body.jobId;
      const deferred = await h.waitForStatus(jobId, 'deferred');
      expect(deferred.statusReason).toMatch(/^low-priority work is paused by an operator since /);
      const handle = h.temporal.workflow.getHandle(jobId);
      await waitFor(
        'JobState=deferred on the workflow',
        async () => (await handle.describe()).typedSearchAttributes.get(JobStateKey) === 'deferred',
      );

      // The step that asked was refused (no attempt spent): it returned the wait, with no failed
      // activity in the history; then the gate ran as a local activity.
      const events = await historyOf(jobId);
      expect(events.filter((ev) => ev.activityTaskFailedEventAttributes)).toEqual([]);
      const returned = events.flatMap((ev) =>
        ev.activityTaskCompletedEventAttributes
          ? [defaultPayloadConverter.fromPayload(ev.activityTaskCompletedEventAttributes.result!.payloads![0]!)]
          : [],
      );
      expect(returned.map((r) => stepWaitOf(r)?.durableJobsWait)).toEqual(['admission']);
      expect(markerNames(events)).toContain('core_local_activity');

      // Nothing of an attempt: no lease row, no attempt row, no effect, no start time, no call.
      const held = await evidence(jobId);
      expect(held).toMatchObject({ leases: [], effects: [], attempts: [] });
      expect(held.intent).toMatchObject({ status: 'deferred', attempts: 0, first_started_at: null });
      expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toBeUndefined();
    } finally {
      expect((await degradation([])).status).toBe(200);
    }

    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.attempts).toBe(1);
    const e = await evidence(jobId);
    expect(e.leases).toEqual([{ attempt: 1, step: 'summarize', outcome: 'completed' }]);
    expect(e.attempts.map((a) => [a.attempt, a.step, a.outcome])).toEqual([[1, 'summarize', 'succeeded']]);
    expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
  });

  // The gate module is shared by every workflow of the worker's thread (preloaded, workers/worker.ts
  // `WORKFLOW_LIBRARY_PATHS`); each workflow's folded gate is its own. Jobs submitted together
  // interleave their workflow tasks on the one worker: were the folded gate one for all, a paused
  // job's refusal would run another job's gate, be admitted by it, and run while paused.
  it('keeps each workflow its own folded gate when paused and admitted jobs run side by side', async () => {
    expect((await degradation(['low'])).status).toBe(200);
    const paused: string[] = [];
    const admitted: string[] = [];
    try {
      const submitted = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          h.submit('summarize', { text: `Side by side ${i}.` }, i % 2 === 0 ? { priority: 'low' } : {}).then((r) => ({ i, r })),
        ),
      );
      for (const { i, r } of submitted) {
        expect(r.status).toBe(202);
        (i % 2 === 0 ? paused : admitted).push(r.body.jobId);
      }
      for (const id of admitted) expect((await h.waitForStatus(id, 'succeeded')).attempts).toBe(1);
      for (const id of paused) {
        await h.waitForStatus(id, 'deferred');
        const handle = h.temporal.workflow.getHandle(id);
        await waitFor(
          `JobState=deferred on ${id}`,
          async () => (await handle.describe()).typedSearchAttributes.get(JobStateKey) === 'deferred',
        );
      }
      // Every admitted job has finished: a paused one that had run would show it by now.
      for (const id of paused) {
        const held = await evidence(id);
        expect(held).toMatchObject({ leases: [], effects: [], attempts: [] });
        expect(held.intent).toMatchObject({ status: 'deferred', attempts: 0, first_started_at: null });
      }
    } finally {
      expect((await degradation([])).status).toBe(200);
    }
    for (const id of paused) {
      expect((await h.waitForStatus(id, 'succeeded')).attempts).toBe(1);
      expect((await h.simEffects()).byKey[`${id}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
    }
  });
});
