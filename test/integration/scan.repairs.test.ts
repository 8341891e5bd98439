import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerScanMetrics } from '../../server/metrics.js';
import { registerTotalMetrics } from '../../server/metrics-totals.js';
import { withTransaction } from '../../lib/db.js';
import { advanceTotals } from '../../store/metric-totals.js';
import { effectKeyFor, inputHash, jobIdFor, keyHash } from '../../lib/ids.js';
import { beginEffect } from '../../store/effects.js';
import { insertIntent } from '../../store/intents.js';
import { insertOutbox } from '../../store/outbox.js';
import type { ScanInput, ScanReport } from '../../contract/scan.js';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

const HOUR = 3_600_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness('scan-repairs');
});
afterAll(async () => {
  await h?.close();
});

/** The scan with an explicit "now"; no schedules, so only the other repairs run. */
const runScan = (input: Partial<ScanInput> = {}) =>
  h.temporal.workflow.execute('compensationScan', {
    taskQueue: h.taskQueue,
    workflowId: `scan-${uid()}`,
    args: [{ schedules: [], ...input }],
  }) as Promise<ScanReport>;
const inAnHour = () => new Date(Date.now() + HOUR).toISOString();

describe('compensation scan: repairs', () => {
  it('starts the workflow of an intent that never got one, once', async () => {
    // What a lost start leaves behind: a committed intent with workflow_started_at NULL.
    const tenantId = TENANTS.a.id;
    const key = `lost-start-${uid()}`;
    const jobId = jobIdFor(tenantId, 'summarize', key);
    const input = { text: 'A start that was lost. Then found.' };
    await insertIntent(h.pool, {
      jobId,
      tenantId,
      jobType: 'summarize',
      keyHash: keyHash(tenantId, key),
      inputHash: inputHash('summarize', input),
      input,
      priority: 'normal',
    });

    // Within the grace period it is left alone (the starter may still be on its way).
    // An hour ahead, the scan would also take the job it starts for an effect stuck in doubt
    // (its effect is pending until the step's result statement), so these scans look at
    // effects only two hours back: this case is about intents; the third case is about effects.
    const intentsOnly = { effectLeaseMs: 2 * HOUR };
    expect((await runScan({ now: new Date().toISOString(), ...intentsOnly })).intentsStarted).toBe(0);
    expect((await runScan({ now: inAnHour(), ...intentsOnly })).intentsStarted).toBe(1);
    expect((await runScan({ now: inAnHour(), ...intentsOnly })).intentsStarted).toBe(0);

    const job = await h.waitForStatus(jobId, 'succeeded');
    expect(job.result.summary).toBe('A start that was lost.');
    expect((await h.simEffects()).byKey[effectKeyFor(jobId, 'summarize')]).toMatchObject({ applied: 1 });
  });

  it('redelivers an outbox row stuck past its deadline, once', async () => {
    const r = await h.submit('summarize', { text: 'Finished, but its notification never left.' });
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');
    // The worker died between committing the result (with its outbox row) and delivering it.
    const effectKey = effectKeyFor(jobId, 'notify-email');
    await insertOutbox(h.pool, {
      jobId,
      kind: 'email',
      effectKey,
      payload: { to: 'ops@example.com', subject: 'done', body: `Job ${jobId} succeeded.` },
      deliverWithinMs: 1,
    });

    const first = await runScan({ now: inAnHour() });
    expect(first).toMatchObject({ outboxRedelivered: 1, errors: 0 });
    expect((await runScan({ now: inAnHour() })).outboxRedelivered).toBe(0);
    const row = await h.pool.query(`SELECT state FROM outbox WHERE effect_key = $1`, [effectKey]);
    expect(row.rows[0].state).toBe('delivered');
    expect((await h.simEffects()).byKey[effectKey]).toMatchObject({ applied: 1, requests: 1 });
  });

  it('reconciles effects stuck pending by asking the upstream by key, never applying them again', async () => {
    const tenantId = TENANTS.a.id;
    const applied = effectKeyFor(`job-${uid()}`, 'summarize');
    const neverSent = effectKeyFor(`job-${uid()}`, 'summarize');
    for (const key of [applied, neverSent]) {
      await beginEffect(h.pool, { effectKey: key, jobId: key.split(':')[0]!, tenantId, step: 'summarize', requestHash: 'h' });
    }
    // The first one reached the upstream, but its answer was lost (the row stays pending, in doubt).
    const res = await fetch(`${h.sim.url}/v1/summaries`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': applied, 'x-tenant-id': tenantId },
      body: JSON.stringify({ text: 'Applied upstream. Answer lost.' }),
    });
    const upstream = (await res.json()) as { id: string };

    const first = await runScan({ now: inAnHour() });
    expect(first).toMatchObject({ effectsReconciled: 1, effectsNotApplied: 1, errors: 0 });
    const again = await runScan({ now: inAnHour() });
    expect(again).toMatchObject({ effectsReconciled: 0, effectsNotApplied: 0 });

    const rows = await h.pool.query(
      `SELECT effect_key, state, in_doubt, provider_id, reconciliations FROM effects WHERE effect_key = ANY($1)`,
      [[applied, neverSent]],
    );
    const byKey = Object.fromEntries(rows.rows.map((x) => [x.effect_key, x]));
    expect(byKey[applied]).toMatchObject({ state: 'succeeded', in_doubt: false, provider_id: upstream.id, reconciliations: 1 });
    expect(byKey[neverSent]).toMatchObject({ state: 'pending', in_doubt: false, reconciliations: 1 });
    const effects = await h.simEffects();
    expect(effects.byKey[applied]).toMatchObject({ applied: 1, requests: 1 });
    expect(effects.byKey[neverSent]).toBeUndefined();
  });

  it('records every run with its counts, also as metrics', async () => {
    const runs = await h.pool.query<{
      intents_started: number;
      outbox_redelivered: number;
      effects_reconciled: number;
      effects_not_applied: number;
    }>('SELECT intents_started, outbox_redelivered, effects_reconciled, effects_not_applied FROM scan_runs');
    expect(runs.rowCount).toBe(7);
    const sum = (k: keyof (typeof runs.rows)[number]) => runs.rows.reduce((n, r) => n + r[k], 0);
    expect([sum('intents_started'), sum('outbox_redelivered'), sum('effects_reconciled'), sum('effects_not_applied')]).toEqual([
      1, 1, 1, 1,
    ]);
    const registry = new Registry();
    registerScanMetrics(registry, h.pool);
    registerTotalMetrics(registry, { pool: h.pool, jobTypes: ['summarize'], log: h.log });
    const text = await registry.metrics();
    for (const kind of ['intent_started', 'outbox_redelivered', 'effect_reconciled', 'effect_not_applied']) {
      expect(text).toContain(`durable_jobs_scan_repairs_recorded{kind="${kind}"} 1`);
    }
    expect(text).toContain('durable_jobs_scan_repairs_recorded{kind="missed_window"} 0');
    expect(text).toMatch(/durable_jobs_scan_last_run_timestamp_seconds [1-9]/);

    // Retention prunes old scan runs: the counter folds them first and never drops.
    await withTransaction(h.pool, (tx) => advanceTotals(tx, { minIntervalSeconds: 0, lagSeconds: 0 }));
    await h.pool.query(`DELETE FROM scan_runs`);
    const fresh = new Registry(); // a new registry: the first one caches its totals for a second
    registerTotalMetrics(fresh, { pool: h.pool, jobTypes: ['summarize'], log: h.log });
    const after = await fresh.metrics();
    for (const kind of ['intent_started', 'outbox_redelivered', 'effect_reconciled', 'effect_not_applied']) {
      expect(after).toContain(`durable_jobs_scan_repairs_recorded{kind="${kind}"} 1`);
    }
  });
});
