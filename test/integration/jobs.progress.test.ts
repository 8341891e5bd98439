import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { progressStepsJobType } from '../fixtures/jobs/progress-steps/activities.js';
import { ADMIN_KEY, startHarness, TENANTS, waitFor, type Harness } from '../support/harness.js';

// Issue 38 §6: a step reports progress (`ctx.progress`); the job's status, the client, the
// timeline and the activity's heartbeat show it while the job runs: here while the simulator
// holds the step's upstream answer, so the job cannot have finished.
const registry = createJobRegistry([...builtInJobTypes, progressStepsJobType]);
let h: Harness;
beforeAll(async () => {
  h = await startHarness('jobs-progress', { jobTypes: registry });
});
afterAll(async () => {
  await h?.close();
});

const admin = { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } } as const;

describe('progress a step reports', () => {
  it('is shown by GET /v1/jobs/{id}, getJob, the timeline and the heartbeat before the job finishes', async () => {
    await h.simFault({ path: '/v1/charges', status: 200, delayMs: 300_000, times: 1 });
    const r = await h.submit('progress-steps', { parts: 4, note: 'four parts' });
    expect(r.status).toBe(202);
    const jobId: string = r.body.jobId;

    // The last report before the held call, stored although the step reported five times in a row.
    const status = await waitFor('the progress before the held call', async () => {
      const s = await h.api(`/v1/jobs/${jobId}`);
      return s.body?.progress?.note === 'waiting for the provider' ? s.body : undefined;
    });
    expect(status.status).toBe('running');
    expect(status.progress).toMatchObject({ done: 4, total: 5, note: 'waiting for the provider', step: 'count' });
    expect(Date.parse(status.progress.at)).not.toBeNaN();

    const viaClient = await h.jobs.getJob(TENANTS.a.id, jobId);
    expect(viaClient.progress).toMatchObject({ done: 4, total: 5, step: 'count' });
    expect(viaClient.status).not.toBe('succeeded');

    const timeline = await h.api(`/v1/admin/jobs/${jobId}/timeline`, admin);
    expect(timeline.status).toBe(200);
    const event = timeline.body.events.find((e: { event: string }) => e.event === 'progress reported by step count');
    expect(event?.detail).toBe('4 of 5: waiting for the provider');

    // The heartbeat carries the same report (the next attempt and the Web UI see it).
    await waitFor('the progress in the heartbeat details', async () => {
      const d = await h.temporal.workflow.getHandle(jobId).describe();
      const details = d.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      const hb = details ? (defaultPayloadConverter.fromPayload(details) as { step?: string; progress?: { done?: number } }) : undefined;
      return hb?.progress?.done === 4 && hb.step === 'count';
    });

    // The job is still held at its call: nothing of the second step yet.
    expect((await h.simEffects()).byKey[`${jobId}:finish`]).toBeUndefined();
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

    const done = await h.waitForStatus(jobId, 'succeeded');
    // The step's last report is stored when the step ends (before the next step runs).
    expect(done.progress).toMatchObject({ done: 5, total: 5, note: 'counted', step: 'count' });
  });
});
