import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsForJob } from '../../store/attempts.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startHarness, uid, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('lookup-by-key', { workers: 0 });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await h?.close();
});

describe('an in-doubt charge on an upstream that answers lookups by key', () => {
  it('is looked up on the very next attempt and recorded without being sent again', async () => {
    expect(defaultJobRegistry.require('purchase').upstream).toEqual({ idempotentByKey: true, lookupByKey: true });
    const first = await spawnWorker(h);
    procs.push(first);
    // The upstream applies the charge and holds its answer; the worker dies in that window.
    await h.simFault({ path: '/v1/charges', times: 1, status: 200, delayMs: 600_000 });
    const r = await h.submit('purchase', {
      amountCents: 4200,
      currency: 'EUR',
      customer: `cus_${uid()}`,
      receiptEmail: 'buyer@example.com',
    });
    const jobId = r.body.jobId as string;
    const key = `${jobId}:charge`;
    await expect.poll(async () => (await h.simEffects()).byKey[key]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    await first.kill('SIGKILL');

    await h.startWorker('lookup-by-key-worker-2');
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 120_000);
    expect(done.result.chargeId).toMatch(/^ch_/);
    // One POST only: the takeover asked by key instead of sending the charge again.
    expect((await h.simEffects()).byKey[key]).toMatchObject({ applied: 1, requests: 1 });
    const effect = (await h.pool.query('SELECT state, reconciliations, provider_id FROM effects WHERE effect_key = $1', [key])).rows[0];
    expect(effect).toEqual({ state: 'succeeded', reconciliations: 1, provider_id: done.result.chargeId });
    const charge = (await attemptsForJob(h.pool, jobId)).filter((a) => a.step === 'charge');
    expect(charge.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'lease_expired'],
      [2, 'reconciled'],
    ]);
  });
});
