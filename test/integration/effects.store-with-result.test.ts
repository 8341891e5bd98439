import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRegistry } from '../../job-api/registry.js';
import { builtInJobTypes } from '../../jobs/index.js';
import { attemptsForJob } from '../../store/attempts.js';
import { effectThenFailJobType } from '../fixtures/jobs/effect-then-fail/activities.js';
import { operatorKey, startHarness, type Harness } from '../support/harness.js';

// `ctx.effect(..., { storeWithResult: true })`: the provider's IDs, the effect's attempt row and
// the slot's release commit in the step's result statement. What must hold: they are in Postgres
// when the job is done, the slot is freed, and a step that fails between the effect and its
// result still records the success first (the next replay must reuse it, not call again).
const registry = createJobRegistry([...builtInJobTypes, effectThenFailJobType]);

let h: Harness;
beforeAll(async () => {
  h = await startHarness('store-with-result', { jobTypes: registry });
});
afterAll(async () => {
  await h?.close();
});

const effectRow = async (key: string) =>
  (await h.pool.query('SELECT state, in_doubt, provider_id, provider_request_id, result FROM effects WHERE effect_key = $1', [key]))
    .rows[0];
const leasesOf = async (jobId: string) =>
  Number((await h.pool.query('SELECT count(*) AS n FROM concurrency_leases WHERE holder LIKE $1', [`${jobId}:%`])).rows[0].n);

describe('an effect stored with the step result', () => {
  it('summarize: the provider IDs land with the result in one statement, and the slot it held is freed', async () => {
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 600_000 });
    const r = await h.submit('summarize', { text: 'Provider IDs ride with the result.' });
    const jobId = r.body.jobId as string;
    // While the call is held the effect is pending and its slot is taken.
    await expect.poll(() => leasesOf(jobId), { timeout: 60_000, interval: 100 }).toBe(1);
    expect(await effectRow(`${jobId}:summarize`)).toMatchObject({ state: 'pending', provider_id: null });
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    const done = await h.waitForStatus(jobId, 'succeeded');
    const effect = await effectRow(`${jobId}:summarize`);
    expect(effect).toMatchObject({ state: 'succeeded', in_doubt: false, provider_id: expect.stringMatching(/\S/) });
    expect(effect.provider_request_id).not.toBeNull();
    expect(done.result).toMatchObject({ providerId: effect.provider_id, providerRequestId: effect.provider_request_id });
    expect((await attemptsForJob(h.pool, jobId)).map((a) => [a.step, a.attempt, a.outcome])).toEqual([['summarize', 1, 'succeeded']]);
    expect(await leasesOf(jobId)).toBe(0);
    expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toMatchObject({ applied: 1, requests: 1 });
  });

  it('a step that fails after the effect and before its result still records the success, and a replay reuses it', async () => {
    const r = await h.submit('effect-then-fail', { note: 'sent, then the step failed', failAfterEffect: true });
    const jobId = r.body.jobId as string;
    const failed = await h.waitForStatus(jobId, 'dead_lettered');
    const effect = await effectRow(`${jobId}:send`);
    expect(effect).toMatchObject({ state: 'succeeded', in_doubt: false, provider_id: expect.stringMatching(/\S/) });
    expect(effect.provider_request_id).not.toBeNull();
    // The effect's own attempt row (written with its success), then the step's failure.
    expect((await attemptsForJob(h.pool, jobId)).map((a) => [a.step, a.attempt, a.outcome, a.errorClass ?? null])).toEqual([
      ['send', 1, 'succeeded', null],
      ['send', 1, 'non_retryable', 'fixture_failure'],
    ]);
    expect(await leasesOf(jobId)).toBe(0);
    expect((await h.simEffects()).byKey[`${jobId}:send`]).toMatchObject({ applied: 1, requests: 1 });

    // The evidence is what a replay needs: its dry run reuses the stored success instead of sending again.
    const dry = await h.api('/v1/dead-letters/replay', {
      method: 'POST',
      tenant: null,
      headers: { authorization: `Bearer ${operatorKey('dana')}` },
      body: { ids: [failed.deadLetterId], dryRun: true },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.deadLetters[0].effects).toEqual([
      expect.objectContaining({ step: 'send', effectKey: `${jobId}:send`, action: 'reuse', state: 'succeeded' }),
    ]);
  });

  it('the same type without the failure stores its result and the effect together', async () => {
    const r = await h.submit('effect-then-fail', { note: 'sent and stored', failAfterEffect: false });
    const jobId = r.body.jobId as string;
    const done = await h.waitForStatus(jobId, 'succeeded');
    const effect = await effectRow(`${jobId}:send`);
    expect(effect).toMatchObject({ state: 'succeeded', provider_id: done.result.notificationId });
    expect((await attemptsForJob(h.pool, jobId)).map((a) => [a.step, a.outcome])).toEqual([['send', 'succeeded']]);
    expect(await leasesOf(jobId)).toBe(0);
  });
});
