import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, uid, waitFor, type Harness, type OperatorName, type TENANTS } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('dl-control');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}, operator: OperatorName = 'bob') =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey(operator)}` } });

async function deadLetteredPurchases(count: number, tenant: keyof typeof TENANTS): Promise<Array<{ jobId: string; deadLetterId: string }>> {
  await h.simFault({ path: '/v1/receipts', times: count, status: 400 });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      (
        await h.submit(
          'purchase',
          { amountCents: 700, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'x@example.com' },
          { tenant },
        )
      ).body.jobId,
    );
  }
  const out = [];
  for (const jobId of ids)
    out.push({ jobId, deadLetterId: (await h.waitForStatus(jobId, 'dead_lettered', tenant)).deadLetterId as string });
  return out;
}

const progress = async (replayId: string) => (await admin(`/v1/dead-letters/replays/${replayId}`)).body;
const until = (replayId: string, what: string, ok: (p: any) => boolean, timeoutMs = 90_000) =>
  waitFor(
    `replay ${replayId}: ${what}`,
    async () => {
      const p = await progress(replayId);
      return ok(p) ? p : undefined;
    },
    timeoutMs,
    250,
  );

describe('replay control', () => {
  it('pause, resume and stop work mid-replay, each an audit row naming its operator; unreplayed dead letters stay open', async () => {
    const dls = await deadLetteredPurchases(10, 'b');
    // Each replayed receipt is held 1.5 s: the replay is slow enough to steer.
    await h.simFault({ path: '/v1/receipts', times: 10, status: 200, delayMs: 1_500 });
    const r = await admin('/v1/dead-letters/replay', {
      body: { ids: dls.map((d) => d.deadLetterId), concurrency: 1, batchSize: 3, ratePerMinute: 600 },
    });
    expect(r.status).toBe(202);
    const { replayId } = r.body;
    await until(replayId, 'first success', (p) => p.counts.succeeded >= 1);

    // Bob requested it; alice pauses and stops it, carol resumes it (F9: each is on record).
    expect((await admin(`/v1/dead-letters/replays/${replayId}/pause`, { method: 'POST' }, 'alice')).status).toBe(202);
    const paused = await until(replayId, 'paused and drained', (p) => p.state === 'paused' && p.counts.running === 0);
    // A paused replay starts nothing new. Instead of a fixed window: a probe job runs through
    // the same worker to success (the worker is polling and claiming work meanwhile), and the
    // replay, whose rate would start its next item every 100 ms, started none.
    const probe = await h.submit('summarize', { text: 'The worker is polling while the replay is paused.' });
    await h.waitForStatus(probe.body.jobId, 'succeeded');
    const still = await progress(replayId);
    expect(still).toMatchObject({ state: 'paused', counts: { succeeded: paused.counts.succeeded, running: 0 } });
    expect((await h.simEffects()).inFlight).toBe(0);

    expect((await admin(`/v1/dead-letters/replays/${replayId}/resume`, { method: 'POST' }, 'carol')).status).toBe(202);
    await until(replayId, 'progress after resume', (p) => p.counts.succeeded > paused.counts.succeeded);
    expect(
      (await admin(`/v1/dead-letters/replays/${replayId}/stop`, { method: 'POST', body: { reason: 'enough for today' } }, 'alice')).status,
    ).toBe(202);
    const stopped = await until(replayId, 'stopped', (p) => p.state === 'stopped');
    expect(stopped.stopReason).toBe('enough for today');
    expect(stopped.requestedBy).toBe('bob');
    expect(stopped.actions).toEqual([
      { action: 'paused', actor: 'alice', at: expect.any(String), details: {} },
      { action: 'resumed', actor: 'carol', at: expect.any(String), details: {} },
      { action: 'stopped', actor: 'alice', at: expect.any(String), details: { reason: 'enough for today' } },
    ]);
    const audit = await h.pool.query('SELECT action, actor FROM replay_actions WHERE replay_id = $1 ORDER BY id', [replayId]);
    expect(audit.rows).toEqual([
      { action: 'paused', actor: 'alice' },
      { action: 'resumed', actor: 'carol' },
      { action: 'stopped', actor: 'alice' },
    ]);
    expect(stopped.counts.pending).toBeGreaterThan(0);
    expect(stopped.counts.succeeded + stopped.counts.pending).toBe(10);

    const pending = stopped.items.filter((i: any) => i.status === 'pending').map((i: any) => i.deadLetterId);
    for (const id of pending) expect((await admin(`/v1/dead-letters/${id}`)).body).toMatchObject({ state: 'open', replayCount: 0 });
    const done = stopped.items.filter((i: any) => i.status === 'succeeded').map((i: any) => i.deadLetterId);
    for (const id of done) expect((await admin(`/v1/dead-letters/${id}`)).body.state).toBe('replayed');
    // The replay is over: more signals are refused.
    const late = await admin(`/v1/dead-letters/replays/${replayId}/resume`, { method: 'POST' });
    expect(late.status).toBe(409);
    expect(late.body.type).toBe('urn:durable-jobs:problem:replay-finished');
    // A refused command leaves no audit row.
    expect((await h.pool.query('SELECT count(*)::int AS n FROM replay_actions WHERE replay_id = $1', [replayId])).rows[0].n).toBe(3);
  });

  it('a stop condition halts a bad replay: more than maxFailures replays failing again', async () => {
    await fetch(`${h.sim.url}/__sim/reset`, { method: 'POST' });
    const dls = await deadLetteredPurchases(6, 'a');
    await h.simFault({ path: '/v1/receipts', times: 6, status: 400 }); // the cause is not fixed
    const r = await admin('/v1/dead-letters/replay', {
      body: { ids: dls.map((d) => d.deadLetterId), concurrency: 1, ratePerMinute: 600, maxFailures: 2 },
    });
    const p = await until(r.body.replayId, 'halted', (x) => ['halted', 'completed', 'stopped'].includes(x.state));
    expect(p).toMatchObject({ state: 'halted', counts: { failed: 3, succeeded: 0, pending: 3, running: 0 } });
    expect(p.stopReason).toMatch(/stop condition: 3 replays failed again/);

    const failed = p.items.filter((i: any) => i.status === 'failed');
    expect(failed).toHaveLength(3);
    for (const item of failed) {
      const d = (await admin(`/v1/dead-letters/${item.deadLetterId}`)).body;
      // Back to open, with the new failure on record; the replay job points at the same evidence.
      expect(d).toMatchObject({ state: 'open', replayCount: 1 });
      expect(d.actions.at(-1)).toMatchObject({
        action: 'replay_failed',
        actor: 'bob',
        details: { replayJobId: item.replayJobId, errorClass: 'invalid_request', statusCode: 400 },
      });
      const job = (await h.api(`/v1/jobs/${item.replayJobId}`)).body;
      expect(job).toMatchObject({ status: 'dead_lettered', deadLetterId: d.id, replayOf: d.jobId });
    }
    // A failed replay is not a second dead letter: one per business intent.
    const count = await h.pool.query(`SELECT count(*)::int AS n FROM dead_letters WHERE job_id LIKE '%-replay-%'`);
    expect(count.rows[0].n).toBe(0);
  });
});
