/**
 * Steering a bulk action (pause, resume, stop: each an audited command under its operator),
 * failure clusters of the dead letters, and a cluster discarded as one bulk action.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, TENANTS, uid, waitFor, workflowBundle, type Harness, type OperatorName } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('bulk-control');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}, operator: OperatorName = 'bob') =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey(operator)}` } });

const show = async (bulkId: string) => (await admin(`/v1/admin/bulk-actions/${bulkId}`)).body;
const until = (bulkId: string, what: string, ok: (b: any) => boolean) =>
  waitFor(
    `bulk ${bulkId}: ${what}`,
    async () => {
      const b = await show(bulkId);
      return ok(b) ? b : undefined;
    },
    120_000,
    200,
  );
const applied = (b: any) => (b.progress ?? b.counts).applied as number;

describe('bulk action control', () => {
  it('pause holds it (proven with a probe job), resume continues, stop ends it; each command on record with its operator', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await h.jobs.submitJob({
        tenantId: TENANTS.a.id,
        type: 'summarize',
        idempotencyKey: `ctl-${uid()}`,
        input: { text: 'held for a steered bulk cancel' },
        delaySeconds: 3_600,
        tags: { batch: 'steered' },
      });
      ids.push(r.jobId);
    }
    // One item a second, one at a time: slow enough to steer.
    const r = await admin('/v1/admin/bulk-actions', {
      body: { action: 'cancel', filter: { tag: 'batch:steered' }, ratePerMinute: 60, batchSize: 1, concurrency: 1 },
    });
    expect(r.status).toBe(202);
    const { bulkId } = r.body;
    await until(bulkId, 'two applied', (b) => applied(b) >= 2);

    expect((await admin(`/v1/admin/bulk-actions/${bulkId}/pause`, { method: 'POST' }, 'alice')).status).toBe(202);
    const paused = await until(bulkId, 'paused and drained', (b) => b.state === 'paused' && b.progress.running === 0);
    // Instead of a fixed window: a probe job runs through the same worker to success, and the
    // bulk action, whose rate would take an item every second, took none.
    const probe = await h.submit('summarize', { text: 'The worker is polling while the bulk action is paused.' });
    await h.waitForStatus(probe.body.jobId, 'succeeded');
    const still = await show(bulkId);
    expect(still.state).toBe('paused');
    expect(applied(still)).toBe(applied(paused));

    expect((await admin(`/v1/admin/bulk-actions/${bulkId}/resume`, { method: 'POST' }, 'carol')).status).toBe(202);
    await until(bulkId, 'progress after resume', (b) => applied(b) > applied(paused));
    const stop = await admin(`/v1/admin/bulk-actions/${bulkId}/stop`, { method: 'POST', body: { reason: 'wrong batch' } }, 'alice');
    expect(stop.status).toBe(202);
    const stopped = await until(bulkId, 'stopped', (b) => b.state === 'stopped' && b.finishedAt !== null);
    expect(stopped).toMatchObject({ requestedBy: 'bob', stopReason: 'wrong batch' });
    expect(stopped.commands).toEqual([
      { command: 'paused', actor: 'alice', at: expect.any(String), details: {} },
      { command: 'resumed', actor: 'carol', at: expect.any(String), details: {} },
      { command: 'stopped', actor: 'alice', at: expect.any(String), details: { reason: 'wrong batch' } },
    ]);
    // Only the jobs it reached were cancelled; the rest still wait for their time.
    const cancelledIds = stopped.items.map((i: any) => i.targetId);
    expect(stopped.counts.applied).toBe(cancelledIds.length);
    expect(cancelledIds.length).toBeLessThan(40);
    await waitFor('the reached jobs cancelled', async () => {
      const n = (
        await h.pool.query(`SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY ($1) AND status = 'cancelled'`, [cancelledIds])
      ).rows[0].n;
      return n === cancelledIds.length ? true : undefined;
    });
    const rest = ids.filter((id) => !cancelledIds.includes(id));
    const queued = (await h.pool.query(`SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY ($1) AND status = 'queued'`, [rest]))
      .rows[0].n;
    expect(queued).toBe(rest.length);
    // Its history (signals mid-run, a stop while batches ran) replays on this bundle. With
    // RECORD_BULK_HISTORY=1 it is kept as a fixture (bulk.history.test.ts replays those forever).
    const history = await h.temporal.workflow.getHandle(bulkId).fetchHistory();
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, bulkId)).resolves.toBeUndefined();
    if (process.env.RECORD_BULK_HISTORY) {
      const dir = new URL('../fixtures/bulk-action/', import.meta.url);
      mkdirSync(dir, { recursive: true });
      const encoded = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish()).toString('base64');
      writeFileSync(
        new URL('steered.json', dir),
        JSON.stringify({ workflowId: bulkId, recordedAt: new Date().toISOString(), history: encoded }, null, 1),
      );
    }
    // A finished bulk action takes no more commands.
    const late = await admin(`/v1/admin/bulk-actions/${bulkId}/resume`, { method: 'POST' });
    expect(late.status).toBe(409);
    expect((await admin('/v1/admin/bulk-actions')).body.bulkActions[0]).toMatchObject({ bulkId, state: 'stopped' });
  });

  it('groups dead letters into failure clusters and discards one cluster as a bulk action, leaving the others open', async () => {
    const purchase = () => ({ amountCents: 700, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'x@example.com' });
    const dead = async (n: number, tenant: 'a' | 'b') => {
      await h.simFault({ path: '/v1/receipts', times: n, status: 400 });
      const jobIds = [];
      for (let i = 0; i < n; i++) jobIds.push((await h.submit('purchase', purchase(), { tenant })).body.jobId);
      const out = [];
      for (const id of jobIds) out.push((await h.waitForStatus(id, 'dead_lettered', tenant)).deadLetterId as string);
      return out;
    };
    const a = await dead(3, 'a');
    const b = await dead(2, 'b');

    const c = await admin('/v1/admin/dead-letters/clusters');
    expect(c.status).toBe(200);
    const mine = c.body.clusters.filter((x: any) => x.jobType === 'purchase');
    // The same refusal, whatever its request IDs and amounts: one cluster per tenant.
    expect(mine.map((x: any) => [x.tenantId, x.count]).sort()).toEqual([
      [TENANTS.a.id, 3],
      [TENANTS.b.id, 2],
    ]);
    const ca = mine.find((x: any) => x.tenantId === TENANTS.a.id);
    const cb = mine.find((x: any) => x.tenantId === TENANTS.b.id);
    expect(ca).toMatchObject({ errorClass: expect.any(String), statusCode: 400, clusterId: expect.stringMatching(/^cl-/) });
    expect(ca.signature).toBe(cb.signature); // one signature, two clusters (tenant)
    expect(Date.parse(ca.firstSeen)).toBeLessThanOrEqual(Date.parse(ca.lastSeen));

    // Preview the cluster as a discard and as a replay; then discard it.
    const preview = await admin('/v1/admin/bulk-actions', { body: { action: 'discard', filter: { cluster: ca.clusterId }, dryRun: true } });
    expect(preview.body).toMatchObject({ count: 3, groups: [{ tenantId: TENANTS.a.id, jobType: 'purchase', count: 3 }] });
    expect(new Set(preview.body.targets.map((t: any) => t.id))).toEqual(new Set(a));
    const replayPreview = await admin('/v1/admin/bulk-actions', {
      body: { action: 'replay', filter: { cluster: ca.clusterId }, dryRun: true },
    });
    expect(replayPreview.body).toMatchObject({ dryRun: true, count: 3 });
    // A job filter key on a dead-letter action is named.
    const wrongKey = await admin('/v1/admin/bulk-actions', { body: { action: 'discard', filter: { cluster: ca.clusterId, tag: 'x:y' } } });
    expect(wrongKey.status).toBe(400);
    expect(wrongKey.body.errors[0].path).toBe('filter.tag');

    const r = await admin(
      '/v1/admin/bulk-actions',
      { body: { action: 'discard', filter: { cluster: ca.clusterId }, reason: 'receipts address invalid' } },
      'erin',
    );
    expect(r.status).toBe(202);
    const done = await until(r.body.bulkId, 'completed', (x) => x.state === 'completed');
    expect(done.counts).toMatchObject({ total: 3, applied: 3, skipped: 0 });
    for (const id of a) {
      const dl = (await admin(`/v1/dead-letters/${id}`)).body;
      expect(dl).toMatchObject({ state: 'discarded', discardReason: 'receipts address invalid' });
      expect(dl.actions.at(-1)).toMatchObject({ action: 'discarded', actor: 'erin', details: { bulkId: r.body.bulkId } });
    }
    for (const id of b) expect((await admin(`/v1/dead-letters/${id}`)).body.state).toBe('open');
    // The discarded cluster is gone from the open clusters; the other stays.
    const after = (await admin('/v1/admin/dead-letters/clusters')).body.clusters.map((x: any) => x.clusterId);
    expect(after).not.toContain(ca.clusterId);
    expect(after).toContain(cb.clusterId);
  });
  it('retry-now ends the back-off of a job waiting to retry (here 5 minutes), keeping its attempt count', async () => {
    // One 429 asking for 300 s (within the type's 10-minute elapsed cap): the job would wait 5 minutes.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 429, retryAfter: '300' });
    const jobId = (await h.submit('summarize', { text: 'A job told to come back in five minutes.' })).body.jobId as string;
    const waiting = await h.waitForStatus(jobId, 'retrying');
    // Temporal holds the step in its retry timer (attempt 2 scheduled, not yet started).
    await waitFor('the step in back-off', async () => {
      const d = await h.temporal.workflow.getHandle(jobId).describe();
      return (d.raw.pendingActivities ?? []).some((a) => (a.attempt ?? 0) >= 2 && a.nextAttemptScheduleTime) ? true : undefined;
    });
    expect(Date.parse(waiting.nextAttemptAt)).toBeGreaterThan(Date.now() + 60_000);

    const r = await admin('/v1/admin/bulk-actions', { body: { action: 'retry-now', ids: [jobId] } }, 'dana');
    expect(r.status).toBe(202);
    const done = await until(r.body.bulkId, 'completed', (b) => b.state === 'completed');
    expect(done.items).toEqual([expect.objectContaining({ targetId: jobId, outcome: 'applied', actor: 'dana' })]);
    const ok = await h.waitForStatus(jobId, 'succeeded');
    // It ran before the time its back-off had set, as attempt 2: the budget was not reset.
    expect(Date.parse(ok.finishedAt)).toBeLessThan(Date.parse(waiting.nextAttemptAt));
    expect(ok.attempts).toBe(2);
    // A job not waiting to retry is skipped, with the reason.
    const again = await admin('/v1/admin/bulk-actions', { body: { action: 'retry-now', ids: [jobId] } });
    const skipped = await until(again.body.bulkId, 'completed', (b) => b.state === 'completed');
    expect(skipped.items[0]).toMatchObject({ outcome: 'skipped', detail: { detail: 'not waiting to retry (succeeded)' } });
  });
});
