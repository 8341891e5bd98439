import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { endReplay, insertAction } from '../../store/dead-letters.js';
import { operatorKey, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('dl-resend');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('carol')}` } });

/** Ends the simulator's held answers (fault `delayMs`) now. */
const release = () => fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
// A test that fails between a hold and its release would leave answers held for 10 minutes,
// and their replays in flight, under the next test: release whatever is still held.
afterEach(async () => {
  await release();
});

const states = async (ids: string[]): Promise<Map<string, string>> => {
  const r = await h.pool.query<{ id: string; state: string }>('SELECT id, state FROM dead_letters WHERE id = ANY($1)', [ids]);
  return new Map(r.rows.map((x) => [x.id, x.state]));
};
const withState = (m: Map<string, string>, s: string) =>
  [...m]
    .filter(([, v]) => v === s)
    .map(([k]) => k)
    .sort();

describe('re-sending a replay request after its workflow was terminated', () => {
  it('skips the replayed, takes over the replaying, replays the rest: each dead letter replayed once, no effect twice', async () => {
    const N = 8;
    await h.simFault({ path: '/v1/receipts', times: N, status: 400 });
    const jobIds: string[] = [];
    for (let i = 0; i < N; i++) {
      const input = { amountCents: 500, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'x@example.com' };
      jobIds.push((await h.submit('purchase', input)).body.jobId);
    }
    const dls: Array<{ jobId: string; id: string }> = [];
    for (const jobId of jobIds) dls.push({ jobId, id: (await h.waitForStatus(jobId, 'dead_lettered')).deadLetterId });
    const ids = dls.map((d) => d.id);

    // The first receipt answers at once and the next two are held until the test releases them:
    // one dead letter is replayed, two stay `replaying` and, as at most `concurrency` (2) move at
    // a time, the other five stay open, however slow the machine is. (A hold of 3 s once ran out
    // between this wait and the re-send on temporal-server: the re-sent request then found
    // nothing replaying.) The rest answer at once.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 1 });
    await h.simFault({ path: '/v1/receipts', times: 2, status: 200, delayMs: 600_000 });
    const body = { ids, concurrency: 2, batchSize: 10, ratePerMinute: 600 };
    const first = await admin('/v1/dead-letters/replay', { body });
    expect(first.status).toBe(202);
    await waitFor(
      'one replayed, one replaying and three still open',
      async () => {
        const m = await states(ids);
        return withState(m, 'replayed').length >= 1 && withState(m, 'replaying').length >= 1 && withState(m, 'open').length >= 3;
      },
      120_000,
      100,
    );
    await h.temporal.workflow.getHandle(first.body.replayId).terminate('operator killed the replay mid-way (test)');
    const before = await states(ids);
    expect(withState(before, 'replayed').length + withState(before, 'replaying').length + withState(before, 'open').length).toBe(N);

    const again = await admin('/v1/dead-letters/replay', { body });
    expect(again.status).toBe(202);
    await release();
    // A local activity the terminated workflow had in flight still commits after the terminate
    // (Temporal does not stop it): a late prepare moves an `open` dead letter to `replaying`, a
    // late finish moves a `replaying` one to `replayed`. So the re-sent request's own report is
    // the partition, checked against the snapshot by the moves that can happen: at most one step
    // along open → replaying → replayed.
    const replayed: string[] = (again.body.skipped ?? []).map((s: any) => s.deadLetterId).sort();
    const replaying: string[] = (again.body.takenOver ?? []).map((t: any) => t.deadLetterId).sort();
    const open = ids.filter((id) => !replayed.includes(id) && !replaying.includes(id)).sort();
    expect(again.body.count).toBe(N - replayed.length);
    expect(replayed.length).toBeGreaterThanOrEqual(1);
    expect(replaying.length).toBeGreaterThanOrEqual(1);
    expect(open.length).toBeGreaterThanOrEqual(1);
    for (const id of replayed) expect(['replayed', 'replaying']).toContain(before.get(id));
    for (const id of replaying) expect(['replaying', 'open']).toContain(before.get(id));
    for (const id of open) expect(before.get(id)).toBe('open');
    for (const id of withState(before, 'replayed')) expect(replayed).toContain(id);
    for (const s of again.body.skipped ?? []) expect(s.replayJobId).toBe(`${dls.find((d) => d.id === s.deadLetterId)!.jobId}-replay-1`);
    expect((again.body.takenOver ?? []).every((t: any) => t.from === first.body.replayId)).toBe(true);

    const p = await h.waitForReplay(again.body.replayId, 180_000);
    expect(p).toMatchObject({
      state: 'completed',
      counts: { total: N, succeeded: replaying.length + open.length, skipped: replayed.length, failed: 0, running: 0, pending: 0 },
    });
    const item = (id: string) => p.items.find((i: any) => i.deadLetterId === id);
    for (const id of replayed) expect(item(id)).toMatchObject({ status: 'skipped', replayJobId: expect.stringMatching(/-replay-1$/) });
    for (const id of replaying) expect(item(id)).toMatchObject({ status: 'succeeded', takenOver: true });
    for (const id of open) expect(item(id)).toMatchObject({ status: 'succeeded' });

    // Every dead letter ends replayed, by exactly one replay job; every effect applied once.
    for (const { jobId, id } of dls) {
      const d = (await admin(`/v1/dead-letters/${id}`)).body;
      expect(d).toMatchObject({ state: 'replayed', replayCount: 1, replayJobId: `${jobId}-replay-1` });
      expect(d.replays).toEqual([expect.objectContaining({ jobId: `${jobId}-replay-1`, status: 'succeeded' })]);
      if (replaying.includes(id)) expect(d.actions.map((a: any) => a.action)).toContain('replay_taken_over');
    }
    const extra = await h.pool.query(`SELECT count(*)::int AS n FROM job_intents WHERE job_id LIKE '%-replay-2'`);
    expect(extra.rows[0].n).toBe(0);
    const sim = await h.simEffects();
    for (const { jobId } of dls) {
      expect(sim.byKey[`${jobId}:charge`]).toMatchObject({ applied: 1 });
      expect(sim.byKey[`${jobId}:receipt`]).toMatchObject({ applied: 1 });
    }
  }, 420_000);
  it('the same filter re-sent takes over what the terminated request left replaying and replays the rest', async () => {
    const N = 4;
    await h.simFault({ path: '/v1/receipts', times: N, status: 400 });
    const tenant = 'tenant-b';
    const dls: Array<{ jobId: string; id: string }> = [];
    for (let i = 0; i < N; i++) {
      const input = { amountCents: 700, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'y@example.com' };
      const jobId = (await h.submit('purchase', input, { tenant: 'b' })).body.jobId;
      dls.push({ jobId, id: (await h.waitForStatus(jobId, 'dead_lettered', 'b')).deadLetterId });
    }
    const ids = dls.map((d) => d.id);
    // The first receipt is held until the re-send has answered (concurrency 1: one replaying).
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 600_000 });
    const body = { filter: { tenantId: tenant, jobType: 'purchase' }, concurrency: 1, batchSize: 10, ratePerMinute: 600 };
    const first = await admin('/v1/dead-letters/replay', { body });
    expect(first.status).toBe(202);
    expect(first.body.count).toBe(N);
    await waitFor('one replaying by the first request', async () => withState(await states(ids), 'replaying').length >= 1, 120_000, 100);
    await h.temporal.workflow.getHandle(first.body.replayId).terminate('operator killed the replay mid-way (test)');

    const again = await admin('/v1/dead-letters/replay', { body });
    expect(again.status).toBe(202);
    await release();
    const takenOver: string[] = (again.body.takenOver ?? []).map((t: any) => t.deadLetterId);
    // Before the change a filter only selected open dead letters: the replaying one stayed so.
    expect(takenOver.length).toBeGreaterThanOrEqual(1);
    expect((again.body.takenOver ?? []).every((t: any) => t.from === first.body.replayId)).toBe(true);
    const p = await h.waitForReplay(again.body.replayId, 180_000);
    expect(p.state).toBe('completed');
    expect(p.counts).toMatchObject({ failed: 0, running: 0, pending: 0 });
    for (const { jobId, id } of dls) {
      expect((await admin(`/v1/dead-letters/${id}`)).body).toMatchObject({
        state: 'replayed',
        replayCount: 1,
        replayJobId: `${jobId}-replay-1`,
      });
    }
    const sim = await h.simEffects();
    for (const { jobId } of dls) expect(sim.byKey[`${jobId}:receipt`]).toMatchObject({ applied: 1 });
  }, 420_000);

  it('a dead letter the terminated request ends after the re-sent request took it over counts as taken over, not skipped', async () => {
    await h.simFault({ path: '/v1/receipts', times: 2, status: 400 });
    const dls: Array<{ jobId: string; id: string }> = [];
    for (let i = 0; i < 2; i++) {
      const input = { amountCents: 900, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'z@example.com' };
      const jobId = (await h.submit('purchase', input)).body.jobId;
      dls.push({ jobId, id: (await h.waitForStatus(jobId, 'dead_lettered')).deadLetterId });
    }
    const [x, y] = dls as [{ jobId: string; id: string }, { jobId: string; id: string }];
    const options = { concurrency: 1, batchSize: 10, ratePerMinute: 600 };
    const held = (jobId: string) =>
      expect.poll(async () => (await h.simEffects()).byKey[`${jobId}:receipt`]?.applied, { timeout: 120_000, interval: 100 }).toBe(1);

    // The first request's replay job for X is held at the upstream while the request is
    // terminated; the job (ABANDON) then succeeds, and X stays `replaying` by the closed request.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 600_000 });
    const first = await admin('/v1/dead-letters/replay', { body: { ids: [x.id], ...options } });
    expect(first.status).toBe(202);
    await held(x.jobId);
    await h.temporal.workflow.getHandle(first.body.replayId).terminate('operator killed the replay mid-way (test)');
    await release();
    const replayJob = `${x.jobId}-replay-1`;
    await h.waitForStatus(replayJob, 'succeeded');
    expect((await states([x.id])).get(x.id)).toBe('replaying');

    // Re-sent with Y (open, replayed first: concurrency 1) and X, which the answer reports taken over.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 600_000 });
    const again = await admin('/v1/dead-letters/replay', { body: { ids: [y.id, x.id], ...options } });
    expect(again.status).toBe(202);
    expect(again.body.takenOver).toEqual([{ deadLetterId: x.id, from: first.body.replayId }]);
    // While Y's replay is held, the terminated request's in-flight finish of X commits: what
    // its local finishReplay writes (Temporal does not stop a terminated workflow's activity).
    await held(y.jobId);
    expect(await endReplay(h.pool, x.id, replayJob, 'succeeded')).toBe(true);
    await insertAction(h.pool, {
      deadLetterId: x.id,
      action: 'replay_succeeded',
      actor: 'carol',
      details: { replayId: first.body.replayId, replayJobId: replayJob },
    });
    await release();

    const p = await h.waitForReplay(again.body.replayId, 180_000);
    expect(p).toMatchObject({ state: 'completed', counts: { total: 2, succeeded: 2, skipped: 0, failed: 0, running: 0, pending: 0 } });
    const item = (id: string) => p.items.find((i: any) => i.deadLetterId === id);
    expect(item(x.id)).toMatchObject({ status: 'succeeded', takenOver: true, replayJobId: replayJob });
    expect(item(y.id)).toMatchObject({ status: 'succeeded', replayJobId: `${y.jobId}-replay-1` });
    const d = (await admin(`/v1/dead-letters/${x.id}`)).body;
    expect(d).toMatchObject({ state: 'replayed', replayCount: 1, replayJobId: replayJob });
    expect(d.actions.map((a: any) => a.action)).toContain('replay_taken_over');
    const extra = await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE job_id = $1', [`${x.jobId}-replay-2`]);
    expect(extra.rows[0].n).toBe(0);
    const sim = await h.simEffects();
    for (const { jobId } of dls) expect(sim.byKey[`${jobId}:receipt`]).toMatchObject({ applied: 1 });
  }, 420_000);
});
