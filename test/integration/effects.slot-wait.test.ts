import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepWaitOf } from '../../contract/job-types.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { inputHash } from '../../lib/ids.js';
import { onStartPath, startJobWorkflow } from '../../services/start-job.js';
import { insertIntent } from '../../store/intents.js';
import { operatorKey, startHarness, uid, waitFor, TENANTS, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// A job waiting for a concurrency slot waits in its workflow (workflows/step-activities.ts): it
// holds no worker activity slot, spends no retry attempt, and its wait is queue time.
let h: Harness;
const procs: WorkerProcess[] = [];
beforeAll(async () => {
  h = await startHarness('slot-wait', { workers: 0 });
  // Two activity slots in the only worker: one is held by the job holding the tenant's only
  // upstream slot, so a waiter that held the other would leave nothing for anyone else.
  procs.push(
    await spawnWorker(h, {
      CONCURRENCY_LIMITS: JSON.stringify({ summarize: { perTenant: 1, global: 4 } }),
      WORKER_ACTIVITY_SLOTS: '2',
    }),
  );
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  await h?.close();
});

const waitingForSlot = async (jobId: string, tenant: keyof typeof TENANTS = 'a') =>
  String((await h.api(`/v1/jobs/${jobId}`, { tenant })).body.statusReason ?? '').includes('waiting for an upstream slot');

/** The events of a job's history whose type name contains `kind` (`ACTIVITY_TASK_FAILED`, `TIMER_STARTED`). */
async function events(jobId: string, kind: string): Promise<any[]> {
  const history = await h.temporal.workflow.getHandle(jobId).fetchHistory();
  const { temporal } = await import('@temporalio/proto');
  return (history.events ?? []).filter((e) => temporal.api.enums.v1.EventType[e.eventType as number]?.includes(kind));
}

/** A job whose upstream call the simulator holds until `/__sim/holds/release`: it keeps tenant A's only slot. */
async function holdTheSlot(): Promise<string> {
  await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 600_000 });
  const holder = (await h.submit('summarize', { text: `Holds the slot ${uid()}.` })).body.jobId as string;
  await expect.poll(async () => (await h.simEffects()).byKey[`${holder}:summarize`]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
  return holder;
}

/** A job started the way the intake starts one, with a budget or on the fast path. */
async function startDirect(text: string, opts: { budget?: { scheduleToCloseTimeoutMs: number }; fast?: boolean }): Promise<string> {
  const jobId = `job-slot-${uid()}`;
  const input = { text };
  await insertIntent(h.pool, {
    jobId,
    tenantId: TENANTS.a.id,
    jobType: 'summarize',
    keyHash: null,
    inputHash: inputHash('summarize', input),
    input,
    priority: 'normal',
  });
  const definition = onStartPath(defaultJobRegistry.require('summarize'), new Set(opts.fast ? ['summarize'] : []));
  await startJobWorkflow(h.temporal, h.taskQueue, definition, {
    jobId,
    tenantId: TENANTS.a.id,
    jobType: 'summarize',
    priority: 'normal',
    ...(opts.budget ? { budget: opts.budget } : {}),
  });
  return jobId;
}

describe('waiting for a concurrency slot in the workflow', () => {
  it('holds no worker activity slot, spends no attempt, and counts as queue time', async () => {
    const holder = await holdTheSlot();
    const waiters = await Promise.all(
      [1, 2, 3].map(async (i) => (await h.submit('summarize', { text: `Waiter ${i} ${uid()}.` })).body.jobId as string),
    );
    for (const w of waiters) await waitFor(`${w} to wait for a slot`, () => waitingForSlot(w));

    // Tenant B's job runs through the worker's second activity slot while tenant A's three
    // jobs wait: none of them holds it (waiting inside the activity, one would).
    const other = (await h.submit('summarize', { text: 'Tenant B is not starved.' }, { tenant: 'b' })).body.jobId as string;
    await h.waitForStatus(other, 'succeeded', 'b', 60_000);
    expect((await h.api(`/v1/jobs/${holder}`)).body.status).toBe('running');
    for (const w of waiters) expect(['queued', 'running']).toContain((await h.api(`/v1/jobs/${w}`)).body.status);

    // Each waiter's history shows the wait: steps that returned a wait for want of a slot, and
    // timers between them; no failed activity (the Web UI and Temporal's failure metrics see none).
    const returned = (await events(waiters[0]!, 'ACTIVITY_TASK_COMPLETED')).map((e) =>
      defaultPayloadConverter.fromPayload(e.activityTaskCompletedEventAttributes.result.payloads[0]),
    );
    expect(returned.length).toBeGreaterThan(0);
    expect(returned.every((r) => stepWaitOf(r)?.durableJobsWait === 'slot')).toBe(true);
    expect(returned[0]).toMatchObject({ attempt: 1, message: expect.stringContaining('slot') });
    expect(await events(waiters[0]!, 'ACTIVITY_TASK_FAILED')).toEqual([]);
    expect((await events(waiters[0]!, 'TIMER_STARTED')).length).toBeGreaterThan(0);
    // The operator's timeline reads those attempts as waits, and the verdict says what the job waits for.
    const timeline = (
      await h.api(`/v1/admin/jobs/${waiters[0]}/timeline`, { tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } })
    ).body;
    const temporalLines = timeline.events.filter((e: any) => e.source === 'temporal').map((e: any) => e.event as string);
    expect(temporalLines).toContain('activity waiting for a slot: summarizeText');
    expect(temporalLines.some((l: string) => l.startsWith('activity failed'))).toBe(false);

    // Nothing was sent for a waiter, so it keeps no effect row: no claim counted, no first send
    // dated before the job ran, no pending row that would read as a refusal. Each retry's claim
    // row exists for the moment between its claim and its withdrawal (store/effects.ts,
    // `withdrawClaim`), so a read can land in that moment: wait for a read between retries. A row
    // that stayed would fail here.
    await waitFor('no effect row kept for the waiters', async () => {
      const waiting = await h.pool.query('SELECT count(*)::int AS n FROM effects WHERE job_id = ANY($1)', [waiters]);
      return waiting.rows[0].n === 0;
    });

    const releasedAt = Date.now();
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.waitForStatus(holder, 'succeeded');
    for (const w of waiters) {
      const done = await h.waitForStatus(w, 'succeeded', 'a', 120_000);
      // No attempt went to the wait, and no attempt row says anything failed.
      expect(done.attempts).toBe(1);
      const rows = await h.pool.query('SELECT attempt, outcome FROM job_attempts WHERE job_id = $1 ORDER BY attempt', [w]);
      expect(rows.rows).toEqual([{ attempt: 1, outcome: 'succeeded' }]);
      // It could not execute before the holder's call ended: the wait is queue time.
      expect(Date.parse(done.firstStartedAt)).toBeGreaterThanOrEqual(releasedAt);
      expect(done.queuedMs).toBe(Date.parse(done.firstStartedAt) - Date.parse(done.createdAt));
      // One claim, the one that sent it, made after the holder's call ended.
      const effect = await h.pool.query<{ attempts: number; first_attempt_at: Date }>(
        'SELECT attempts, first_attempt_at FROM effects WHERE job_id = $1',
        [w],
      );
      expect(effect.rows).toHaveLength(1);
      expect(effect.rows[0]!.attempts).toBe(1);
      expect(effect.rows[0]!.first_attempt_at.getTime()).toBeGreaterThanOrEqual(releasedAt);
    }
    const effects = await h.simEffects();
    expect(effects.peakInFlightByTenant['tenant-a']).toBe(1);
    for (const id of [holder, ...waiters]) expect(effects.byKey[`${id}:summarize`].applied).toBe(1);
    // The waits' claims left no effect in doubt: each was sent once, afresh, not reconciled.
    const reconciled = await h.pool.query('SELECT count(*)::int AS n FROM effects WHERE reconciliations > 0');
    expect(reconciled.rows[0].n).toBe(0);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM concurrency_leases')).rows[0].n).toBe(0);
  });

  it('a freed slot wakes the waiter: the statement that frees it names the job, and its workflow is signalled', async () => {
    const holder = await holdTheSlot();
    const waiter = (await h.submit('summarize', { text: `Woken by the release ${uid()}.` })).body.jobId as string;
    await waitFor(`${waiter} to wait for a slot`, () => waitingForSlot(waiter));
    await waitFor(`${waiter} to register as a waiter`, async () => {
      const r = await h.pool.query('SELECT count(*)::int AS n FROM slot_waiters WHERE job_id = $1', [waiter]);
      return r.rows[0].n === 1;
    });
    expect(await events(waiter, 'SIGNALED')).toHaveLength(0);

    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.waitForStatus(holder, 'succeeded');
    const done = await h.waitForStatus(waiter, 'succeeded', 'a', 120_000);
    expect(done.attempts).toBe(1);
    // The holder's result statement freed the slot and took the waiter out; its worker signalled it.
    const signals = await events(waiter, 'SIGNALED');
    expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual(['slotFreed']);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM slot_waiters WHERE job_id = $1', [waiter])).rows[0].n).toBe(0);
    expect((await h.simEffects()).byKey[`${waiter}:summarize`].applied).toBe(1);
  });

  it('dead-letters a job whose elapsed cap runs out while it waits, without calling the upstream', async () => {
    const holder = await holdTheSlot();
    // A job with a 6 s elapsed cap.
    const jobId = await startDirect('Waits past its elapsed cap.', { budget: { scheduleToCloseTimeoutMs: 6_000 } });
    await h.waitForStatus(jobId, 'dead_lettered', 'a', 60_000);
    const letter = (await h.pool.query('SELECT error_class, message FROM dead_letters WHERE job_id = $1', [jobId])).rows[0];
    expect(letter.error_class).toBe('slot_unavailable');
    expect(letter.message).toContain('ran out while waiting');
    expect((await h.simEffects()).byKey[`${jobId}:summarize`]).toBeUndefined();
    // Its waits returned; only the workflow failed, with the dead letter's evidence.
    expect(await events(jobId, 'ACTIVITY_TASK_FAILED')).toEqual([]);

    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.waitForStatus(holder, 'succeeded');
  });

  it('waits in the workflow on the fast path too: a timer between local attempts, one attempt in the end', async () => {
    const holder = await holdTheSlot();
    const jobId = await startDirect('Waits on the fast path.', { fast: true });
    await waitFor(`${jobId} to wait for a slot`, () => waitingForSlot(jobId));
    await waitFor(`${jobId} to wait on a timer`, async () => (await events(jobId, 'TIMER_STARTED')).length > 0);
    expect((await events(jobId, 'ACTIVITY_TASK_SCHEDULED')).length).toBe(0);

    const releasedAt = Date.now();
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.waitForStatus(holder, 'succeeded');
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 120_000);
    expect(done.attempts).toBe(1);
    // The local attempts that found no slot set no first start: the wait is queue time.
    expect(Date.parse(done.firstStartedAt)).toBeGreaterThanOrEqual(releasedAt);
    const rows = await h.pool.query('SELECT attempt, outcome FROM job_attempts WHERE job_id = $1 ORDER BY attempt', [jobId]);
    expect(rows.rows).toEqual([{ attempt: 1, outcome: 'succeeded' }]);
    expect((await h.simEffects()).byKey[`${jobId}:summarize`].applied).toBe(1);
    expect((await h.temporal.workflow.getHandle(jobId).describe()).type).toBe('summarizeJobLocal');
    // The local attempts that waited returned the wait: no local activity's marker records a failure.
    const markers = await events(jobId, 'MARKER_RECORDED');
    expect(markers.length).toBeGreaterThan(1);
    expect(markers.filter((e) => e.markerRecordedEventAttributes?.failure)).toEqual([]);
  });
});
