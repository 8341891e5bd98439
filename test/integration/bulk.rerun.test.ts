/**
 * Reruns (issue 38 §3): a finished job runs again as a new linked job; from a step, the effects
 * before it are reused (the simulator is not even asked) and the rest execute again with new keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBulkActionsAdmin } from '../../client/index.js';
import { operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('bulk-rerun');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('olive')}` } });

const purchase = () => ({ amountCents: 1_200, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'rerun@example.com' });

describe('rerun', () => {
  it('reruns a succeeded job: all effects again with new keys; from a step: the ones before it reused', async () => {
    const jobId = (await h.submit('purchase', purchase())).body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');

    // The preview names each effect's fate and the new job; nothing changes.
    const whole = await admin(`/v1/admin/jobs/${jobId}/rerun`, { body: { dryRun: true } });
    expect(whole.status).toBe(200);
    expect(whole.body).toMatchObject({
      rerunJobId: `${jobId}-rerun-1`,
      fromStep: null,
      effects: [
        {
          step: 'charge',
          action: 'execute',
          effectKey: `${jobId}-rerun-1:charge`,
          original: { effectKey: `${jobId}:charge`, state: 'succeeded' },
        },
        { step: 'receipt', action: 'execute', effectKey: `${jobId}-rerun-1:receipt`, original: { state: 'succeeded' } },
      ],
    });
    const fromReceipt = await admin(`/v1/admin/jobs/${jobId}/rerun`, { body: { dryRun: true, fromStep: 'receipt' } });
    expect(fromReceipt.body.effects.map((e: any) => [e.step, e.action])).toEqual([
      ['charge', 'reuse'],
      ['receipt', 'execute'],
    ]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE rerun_of = $1', [jobId])).rows[0].n).toBe(0);

    // Rerun of the whole job: a new job, linked, every effect executed again under its own key.
    const r1 = await admin(`/v1/admin/jobs/${jobId}/rerun`, { body: {} });
    expect(r1.status).toBe(202);
    const rerun1 = r1.body.rerunJobId as string;
    expect(rerun1).toBe(`${jobId}-rerun-1`);
    const s1 = await h.waitForStatus(rerun1, 'succeeded');
    expect(s1.rerunOf).toBe(jobId);
    let sim = await h.simEffects();
    expect(sim.byKey[`${rerun1}:charge`]).toMatchObject({ applied: 1, requests: 1 });
    expect(sim.byKey[`${rerun1}:receipt`]).toMatchObject({ applied: 1, requests: 1 });
    expect(sim.byKey[`${jobId}:charge`]).toMatchObject({ applied: 1, requests: 1 }); // the original's, untouched

    // The single rerun's audit row, under the operator's name, like a bulk action's items; both timelines show it.
    const audit = await h.pool.query('SELECT job_id, action, actor, result_job_id, details FROM job_actions WHERE job_id = $1', [jobId]);
    expect(audit.rows).toEqual([{ job_id: jobId, action: 'rerun', actor: 'olive', result_job_id: rerun1, details: {} }]);
    const events = async (id: string) =>
      ((await admin(`/v1/admin/jobs/${id}/timeline`)).body.events as any[]).filter((e) => e.kind === 'job_actions');
    expect(await events(jobId)).toMatchObject([{ event: 'rerun requested by olive', detail: `new job ${rerun1}` }]);
    expect(await events(rerun1)).toMatchObject([{ event: `rerun of ${jobId} requested by olive` }]);

    // From the receipt, through the client's operator face: the charge is reused (no request
    // at all under the new job's key), the receipt executed again.
    const bulkAdmin = createBulkActionsAdmin({ pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, actor: 'olive' });
    const p2 = await bulkAdmin.rerun(jobId, { fromStep: 'receipt' });
    expect(p2).toMatchObject({ dryRun: false, rerunJobId: `${jobId}-rerun-2`, fromStep: 'receipt' });
    const s2 = await h.waitForStatus(`${jobId}-rerun-2`, 'succeeded');
    expect(s2).toMatchObject({ rerunOf: jobId, rerunFromStep: 'receipt' });
    const second = await h.pool.query('SELECT actor, details FROM job_actions WHERE result_job_id = $1', [`${jobId}-rerun-2`]);
    expect(second.rows).toEqual([{ actor: 'olive', details: { fromStep: 'receipt' } }]);
    sim = await h.simEffects();
    expect(sim.byKey[`${jobId}-rerun-2:charge`]).toBeUndefined();
    expect(sim.byKey[`${jobId}-rerun-2:receipt`]).toMatchObject({ applied: 1, requests: 1 });
    const original = (await h.api(`/v1/jobs/${jobId}`)).body;
    // The reused charge is the original's charge; the receipt is a new one.
    expect(s2.result.chargeId).toBe(original.result.chargeId);
    expect(s2.result.receiptId).not.toBe(original.result.receiptId);
  });

  it('refuses a job still running (409), an unknown step (400 naming fromStep) and an unknown job (404)', async () => {
    const delayed = await h.jobs.submitJob({
      tenantId: TENANTS.a.id,
      type: 'summarize',
      idempotencyKey: `rerun-${uid()}`,
      input: { text: 'not finished yet' },
      delaySeconds: 3_600,
    });
    const running = await admin(`/v1/admin/jobs/${delayed.jobId}/rerun`, { body: {} });
    expect(running.status).toBe(409);
    expect(running.body).toMatchObject({ type: expect.stringContaining('job-not-finished'), status: 409 });
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE rerun_of = $1', [delayed.jobId])).rows[0].n).toBe(0);

    const done = (await h.submit('summarize', { text: 'A finished job to rerun from a step it does not have.' })).body.jobId;
    await h.waitForStatus(done, 'succeeded');
    const badStep = await admin(`/v1/admin/jobs/${done}/rerun`, { body: { fromStep: 'charge' } });
    expect(badStep.status).toBe(400);
    expect(badStep.body.errors).toEqual([{ path: 'fromStep', message: expect.stringContaining('summarize') }]);
    expect((await admin('/v1/admin/jobs/job-nope/rerun', { body: {} })).status).toBe(404);
  });

  it('reruns by filter as a bulk action: one new job per finished job, the audit row names it', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await h.jobs.submitJob({
        tenantId: TENANTS.b.id,
        type: 'summarize',
        idempotencyKey: `rerun-bulk-${uid()}`,
        input: { text: `bulk rerun ${i}` },
        tags: { rerun: 'nightly' },
      });
      ids.push(r.jobId);
    }
    for (const id of ids) await h.waitForStatus(id, 'succeeded', 'b');
    const r = await admin('/v1/admin/bulk-actions', { body: { action: 'rerun', filter: { tag: 'rerun:nightly' } } });
    expect(r.status).toBe(202);
    const done = await waitFor('bulk rerun', async () => {
      const b = (await admin(`/v1/admin/bulk-actions/${r.body.bulkId}`)).body;
      return b.state === 'completed' ? b : undefined;
    });
    expect(done.counts).toMatchObject({ total: 3, applied: 3 });
    for (const item of done.items) {
      expect(item).toMatchObject({ actor: 'olive', outcome: 'applied', detail: { jobId: `${item.targetId}-rerun-1` } });
      expect((await h.waitForStatus(item.detail.jobId, 'succeeded', 'b')).rerunOf).toBe(item.targetId);
    }
  });
});
