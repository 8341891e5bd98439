import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsForJob } from '../../store/attempts.js';
import { recordEffectSuccess } from '../../store/effects.js';
import { writeResultFenced } from '../../store/step-result.js';
import { operatorKey, startHarness, waitFor, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// The fast path (README "The fast path"): `summarize` named in FAST_PATH_JOB_TYPES runs as
// `summarizeJobLocal`, its steps local activities, the whole job in one workflow task.
let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('fast-path', { workers: 0, fastPath: ['summarize'] });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await h?.close();
});

/** How many events of each kind the job's history holds, by their attributes' names. */
async function history(jobId: string): Promise<Record<string, number>> {
  const events = (await h.temporal.workflow.getHandle(jobId).fetchHistory()).events ?? [];
  const kinds: Record<string, number> = {};
  for (const e of events) {
    const kind = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
    if (kind) kinds[kind.replace(/EventAttributes$/, '')] = (kinds[kind.replace(/EventAttributes$/, '')] ?? 0) + 1;
  }
  return kinds;
}

describe('the fast path', () => {
  it('runs a summarize job in one workflow task, with no activity task and no patch marker, and records it like the standard path', async () => {
    await h.startWorker('fast-path-worker-1');
    const r = await h.submit('summarize', { text: 'One workflow task.', notifyEmail: 'ops@example.com' });
    expect(r.status).toBe(202);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.result.summary).toBe('One workflow task.');
    expect(done.attempts).toBe(1);

    const handle = h.temporal.workflow.getHandle(r.body.jobId);
    await handle.result();
    const d = await handle.describe();
    expect(d.type).toBe('summarizeJobLocal');
    expect(d.searchAttributes.JobState).toEqual(['succeeded']);
    const kinds = await history(r.body.jobId);
    expect(kinds.workflowExecutionStarted).toBe(1);
    expect(kinds.activityTaskScheduled).toBeUndefined();
    expect(kinds.workflowTaskCompleted).toBe(1);
    // Markers: the gate, the step and the notification (local activities); none of them a patch.
    const markers = ((await handle.fetchHistory()).events ?? []).filter((e) => e.markerRecordedEventAttributes);
    expect(markers.map((m) => m.markerRecordedEventAttributes?.markerName)).toEqual([
      'core_local_activity',
      'core_local_activity',
      'core_local_activity',
    ]);

    // The same evidence as a leased activity's: the attempt, its lease row ended, one effect each.
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.map((a) => [a.attempt, a.step, a.outcome])).toEqual([
      [1, 'summarize', 'succeeded'],
      [1, 'notify-email', 'succeeded'],
    ]);
    const leases = await h.pool.query('SELECT attempt, step, outcome FROM activity_leases WHERE job_id = $1', [r.body.jobId]);
    expect(leases.rows).toEqual([{ attempt: 1, step: 'summarize', outcome: 'completed' }]);
    const intent = await h.pool.query('SELECT notification_state FROM job_intents WHERE job_id = $1', [r.body.jobId]);
    expect(intent.rows[0].notification_state).toBe('sent');
    const sim = await h.simEffects();
    expect(sim.byKey[`${r.body.jobId}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
    expect(sim.byKey[`${r.body.jobId}:notify-email`]).toMatchObject({ applied: 1 });
  });

  it('retries a 429 with its Retry-After as a second attempt, in the one retry layer', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 429, retryAfter: '3' });
    const r = await h.submit('summarize', { text: 'Retried locally.' });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.attempts).toBe(2);
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.errorClass, a.statusCode, a.delayMs])).toEqual([
      [1, 'retryable', 'rate_limited', 429, 3000],
      [2, 'succeeded', null, 200, null],
    ]);
    const entry = (await h.simEffects()).byKey[`${r.body.jobId}:summarize`];
    expect(entry).toMatchObject({ applied: 1, requests: 2 });
    // The SDK honoured the delay the activity chose (nextRetryDelay), on a local activity too:
    // the retry policy alone would have waited its initial interval, 1 s.
    const times = entry.requestTimes.map((t: string) => Date.parse(t));
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(2_900);
  });
});

describe('a fast-path job that cannot succeed', () => {
  it('is dead-lettered with its evidence, as on the standard path (a local activity fails without an ActivityFailure around it)', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 400 });
    const r = await h.submit('summarize', { text: 'Refused by the upstream.' });
    const done = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    expect(done.attempts).toBe(1);
    const letter = await h.pool.query('SELECT error_class, status_code, failed_step FROM dead_letters WHERE job_id = $1', [r.body.jobId]);
    expect(letter.rows).toEqual([{ error_class: 'invalid_request', status_code: 400, failed_step: 'summarizeText' }]);
    const handle = h.temporal.workflow.getHandle(r.body.jobId);
    // The row is written by the dead-letter activity; the search attribute follows in the
    // workflow task after it, so it may lag the row by that task (workflows/lifecycle.ts).
    await waitFor('JobState=dead_lettered on the workflow', async () =>
      ((await handle.describe()).searchAttributes.JobState as string[] | undefined)?.includes('dead_lettered'),
    );
    expect((await handle.describe()).searchAttributes.JobState).toEqual(['dead_lettered']);
  });
});

describe('the timeline of a fast-path job', () => {
  it('says where a held step is from Postgres, and shows each local activity as the activity it stands for', async () => {
    const timeline = async (jobId: string) => {
      const r = await h.api(`/v1/admin/jobs/${jobId}/timeline`, {
        tenant: null,
        headers: { authorization: `Bearer ${operatorKey('alice')}` },
      });
      expect(r.status).toBe(200);
      return r.body;
    };
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 5_000 });
    const jobId = (await h.submit('summarize', { text: 'held on the fast path' })).body.jobId;
    // No pending activity exists while the step runs: the verdict comes from the effect row.
    const held = await waitFor(`timeline verdict of ${jobId} to say the effect is in doubt`, async () => {
      const t = await timeline(jobId);
      return /^side effect in doubt: summarize sent \d\d:\d\d:\d\dZ, no answer/.test(t.verdict.words) ? t : undefined;
    });
    expect(held.verdict).toMatchObject({ stage: 'side_effects', condition: 'in_doubt' });
    await h.waitForStatus(jobId, 'succeeded');
    const done = await waitFor(`timeline of ${jobId} to show the step's marker`, async () => {
      const t = await timeline(jobId);
      const events = t.events.map((e: { event: string }) => e.event);
      return events.includes('activity completed: summarizeText') ? events : undefined;
    });
    expect(done).toContain('activity completed: checkAdmission');
    expect(done).toContain(`effect ${jobId}:summarize executed`);
  });
});

describe('a worker killed inside a fast-path job', () => {
  it('another worker takes the job over after the workflow-task timeout; the effect stays applied once and the old attempt is fenced', async () => {
    // Only worker processes from here: the in-process one would take the job over at once.
    await Promise.all(h.workers.map((w) => w.shutdown()));
    const first = await spawnWorker(h);
    procs.push(first);
    // The upstream applies the effect at once but holds its answer: the worker dies in the
    // window between "upstream did the work" and "we stored it".
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 60_000 });
    const r = await h.submit('summarize', { text: 'Applied, then the fast-path worker died.' });
    const key = `${r.body.jobId}:summarize`;
    await expect.poll(async () => (await h.simEffects()).byKey[key]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    await first.kill('SIGKILL');

    const second = await spawnWorker(h);
    procs.push(second);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded', 'a', 120_000);
    // Postgres numbered the attempts: the SDK counted the new workflow task's attempt from 1 again.
    expect(done.attempts).toBe(2);
    expect(done.result.summary).toBe('Applied, then the fast-path worker died.');
    expect((await h.simEffects()).byKey[key]).toMatchObject({ applied: 1, requests: 2 });
    const attempts = await attemptsForJob(h.pool, r.body.jobId);
    expect(attempts.map((a) => [a.attempt, a.step, a.outcome, a.errorClass])).toEqual([
      [1, 'summarize', 'lease_expired', 'lease_lost'],
      [2, 'summarize', 'reconciled', null],
    ]);
    const kinds = await history(r.body.jobId);
    expect(kinds.workflowTaskTimedOut).toBeGreaterThanOrEqual(1);
    expect(kinds.activityTaskScheduled).toBeUndefined();

    // Had the first worker lived on (paused, not dead), every write of its attempt 1 would
    // be refused now that attempt 2 started: the effect's outcome and the result.
    const lease = await h.pool.query<{ run_id: string; activity_id: string }>(
      'SELECT run_id, activity_id FROM activity_leases WHERE job_id = $1 AND attempt = 1',
      [r.body.jobId],
    );
    const fence = { workflowId: r.body.jobId, runId: lease.rows[0]!.run_id, activityId: lease.rows[0]!.activity_id, attempt: 1 };
    const before = await h.pool.query('SELECT result, result_fence, updated_at FROM job_intents WHERE job_id = $1', [r.body.jobId]);
    expect(await recordEffectSuccess(h.pool, key, 'stale-request', 'stale-provider', { summary: 'stale' }, fence)).toBe(false);
    expect((await writeResultFenced(h.pool, r.body.jobId, 1, { summary: 'stale' }, null)).landed).toBe(false);
    const after = await h.pool.query('SELECT result, result_fence, updated_at FROM job_intents WHERE job_id = $1', [r.body.jobId]);
    expect(after.rows[0]).toEqual(before.rows[0]);
    const effect = await h.pool.query('SELECT provider_id FROM effects WHERE effect_key = $1', [key]);
    expect(effect.rows[0].provider_id).not.toBe('stale-provider');
  });
});
