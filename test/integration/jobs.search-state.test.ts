import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStateKey } from '../../lib/temporal.js';
import { SEARCH_STATE_FOR_STATUS } from '../../workflows/job-state.js';
import { JOB_STATES } from '../../contract/job-types.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('search-state', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

const jobState = async (jobId: string) => (await h.temporal.workflow.getHandle(jobId).describe()).typedSearchAttributes.get(JobStateKey);
const apiStatus = async (jobId: string) => (await h.api(`/v1/jobs/${jobId}`)).body;

describe('the JobState search attribute next to the API status', () => {
  it('says what the API says at each moment a user can see, except retrying, which it shows as running', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 503, retryAfter: '3' });
    // The notification is held until the test releases it: the job stays "succeeded, notification pending".
    await h.simFault({ path: '/v1/notifications', times: 1, status: 200, delayMs: 600_000 });
    const r = await h.submit('summarize', { text: 'Visible state.', notifyEmail: 'someone@example.com' });
    const jobId = r.body.jobId as string;
    // No worker yet: both say queued.
    expect((await apiStatus(jobId)).status).toBe('queued');
    expect(await jobState(jobId)).toBe('queued');

    await h.startWorker('search-state-worker-1');
    // Between attempts: the API says retrying; the workflow cannot see server-side retries.
    await h.waitForStatus(jobId, 'retrying');
    expect(await jobState(jobId)).toBe(SEARCH_STATE_FOR_STATUS.retrying);
    expect(SEARCH_STATE_FOR_STATUS.retrying).toBe('running');

    // Result stored, notification still held: both say succeeded (the attribute follows within a task).
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.notification).toBe('pending');
    await waitFor(
      'JobState to say succeeded while the notification is pending',
      async () => (await jobState(jobId)) === 'succeeded',
      30_000,
    );
    expect((await apiStatus(jobId)).notification).toBe('pending');

    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.temporal.workflow.getHandle(jobId).result();
    expect((await apiStatus(jobId)).notification).toBe('sent');
    expect(await jobState(jobId)).toBe('succeeded');
  });

  it('maps every API status to the JobState a user filters by', () => {
    for (const s of JOB_STATES) expect(SEARCH_STATE_FOR_STATUS[s]).toBe(s === 'retrying' ? 'running' : s);
  });
});
