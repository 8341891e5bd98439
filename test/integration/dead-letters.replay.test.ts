import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, uid, type Harness, type TENANTS } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('dl-replay');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } });

const purchase = (customer: string) => ({ amountCents: 900, currency: 'EUR', customer, receiptEmail: 'buyer@example.com' });

/** Purchases whose receipt is refused (400): each becomes one open dead letter. */
async function deadLetteredPurchases(count: number, tenant: keyof typeof TENANTS): Promise<Array<{ jobId: string; deadLetterId: string }>> {
  await h.simFault({ path: '/v1/receipts', times: count, status: 400 });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await h.submit('purchase', purchase(`cus_${uid()}`), { tenant })).body.jobId);
  const out = [];
  for (const jobId of ids) {
    const job = await h.waitForStatus(jobId, 'dead_lettered', tenant);
    out.push({ jobId, deadLetterId: job.deadLetterId as string });
  }
  return out;
}

const replayFinished = (replayId: string, timeoutMs?: number): Promise<any> => h.waitForReplay(replayId, timeoutMs);

describe('replay of dead letters', () => {
  it('replays 50 dead letters with concurrency 3 and the rate limit; all succeed; originals stay, marked replayed', async () => {
    const dls = await deadLetteredPurchases(50, 'b');
    await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' }); // healthy again, peaks from zero
    // Every receipt is held 400 ms, so replays running at once overlap at the provider.
    await h.simFault({ path: '/v1/receipts', times: 50, status: 200, delayMs: 400 });
    const ratePerMinute = 300; // one start per 200 ms
    const r = await admin('/v1/dead-letters/replay', {
      body: { filter: { tenantId: 'tenant-b' }, concurrency: 3, batchSize: 10, ratePerMinute },
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ count: 50, replayId: expect.stringMatching(/^replay-/) });

    const p = await replayFinished(r.body.replayId);
    expect(p).toMatchObject({ state: 'completed', counts: { total: 50, succeeded: 50, failed: 0, skipped: 0, pending: 0, running: 0 } });
    expect(p.peakRunning).toBeLessThanOrEqual(3);
    const sim = await h.simEffects();
    expect(sim.peakInFlight).toBeLessThanOrEqual(3);
    expect(sim.peakInFlight).toBeGreaterThanOrEqual(2); // the bound was actually exercised
    // The rate (token bucket, workflow time): in any window of t ms at most burst + t * rate / 60000 starts.
    expect(p.options.burst).toBe(5);
    const starts = p.items.map((i: any) => Date.parse(i.startedAt)).sort((a: number, b: number) => a - b);
    for (let i = 0; i < starts.length; i++) {
      for (let j = i; j < starts.length; j++)
        expect(j - i + 1).toBeLessThanOrEqual(p.options.burst + ((starts[j] - starts[i]) * ratePerMinute) / 60_000 + 1e-9);
    }
    expect(starts.at(-1) - starts[0]).toBeGreaterThanOrEqual((50 - p.options.burst) * 200);
    // The bucket starts full: the first three (the cap) start in the same workflow task, none
    // waits on a timer for the second token (the dev server fires a 200 ms timer about a second late).
    expect(starts[2] - starts[0]).toBe(0);
    // Only receipts reached the provider: every charge was reused from its stored effect.
    expect(sim.totalApplied).toBe(50);
    expect(Object.values(sim.byKey).every((k: any) => k.path === '/v1/receipts')).toBe(true);

    const replayed = await admin('/v1/dead-letters?state=replayed&tenantId=tenant-b&limit=100');
    expect(replayed.body.deadLetters.map((d: any) => d.id).sort()).toEqual(dls.map((d) => d.deadLetterId).sort());
    // The originals remain: still dead-lettered, with their failed Temporal history.
    const { jobId, deadLetterId } = dls[0]!;
    expect((await h.api(`/v1/jobs/${jobId}`, { tenant: 'b' })).body).toMatchObject({ status: 'dead_lettered', deadLetterId });
    expect((await h.temporal.workflow.getHandle(jobId).describe()).status.name).toBe('FAILED');
    const replayJob = (await h.api(`/v1/jobs/${jobId}-replay-1`, { tenant: 'b' })).body;
    expect(replayJob).toMatchObject({ status: 'succeeded', replayOf: jobId });
    const d = (await admin(`/v1/dead-letters/${deadLetterId}`)).body;
    expect(d.actions.map((a: any) => a.action)).toEqual(['recorded', 'replay_requested', 'replay_started', 'replay_succeeded']);
    expect(d.actions.slice(1).every((a: any) => a.actor === 'alice')).toBe(true);
    expect(d.replays).toEqual([expect.objectContaining({ jobId: `${jobId}-replay-1`, status: 'succeeded' })]);
  });

  it('reuses effects that already succeeded (no new effect at the provider), as the dry run predicted', async () => {
    const { jobId, deadLetterId } = (await deadLetteredPurchases(1, 'a'))[0]!;
    const dry = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId], dryRun: true } });
    expect(dry.status).toBe(200);
    expect(dry.body.deadLetters).toEqual([
      expect.objectContaining({
        deadLetterId,
        replayJobId: `${jobId}-replay-1`,
        changed: { codeVersion: false, inputHash: false },
        effects: [
          expect.objectContaining({ step: 'charge', effectKey: `${jobId}:charge`, action: 'reuse', state: 'succeeded' }),
          expect.objectContaining({ step: 'receipt', effectKey: `${jobId}:receipt`, action: 'execute', state: 'failed' }),
        ],
      }),
    ]);
    // A dry run changes nothing.
    expect((await admin(`/v1/dead-letters/${deadLetterId}`)).body).toMatchObject({ state: 'open', replayCount: 0 });

    const before = (await h.simEffects()).byKey[`${jobId}:charge`];
    expect(before).toMatchObject({ applied: 1, requests: 1 });
    const r = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId] } });
    expect(r.status).toBe(202);
    expect((await replayFinished(r.body.replayId)).counts.succeeded).toBe(1);
    const after = await h.simEffects();
    expect(after.byKey[`${jobId}:charge`]).toMatchObject({ applied: 1, requests: 1 }); // reused: not even asked
    expect(after.byKey[`${jobId}:receipt`]).toMatchObject({ applied: 1 }); // executed, once
    const replayJob = (await h.api(`/v1/jobs/${jobId}-replay-1`)).body;
    expect(replayJob.result).toMatchObject({ chargeId: expect.stringMatching(/^ch_/), receiptId: expect.stringMatching(/^rcpt_/) });
    expect((await admin(`/v1/dead-letters/${deadLetterId}`)).body.state).toBe('replayed');
    // Replaying it again is refused: it is no longer open.
    const again = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId] } });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('urn:durable-jobs:problem:dead-letter-not-open');
  });
});
