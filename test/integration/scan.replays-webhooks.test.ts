import { defaultJobRegistry } from '../../jobs/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeadLetterActivities } from '../../activities/dead-letters.js';
import { effectKeyFor } from '../../lib/ids.js';
import { recordDelivery } from '../../store/webhook-deliveries.js';
import type { ScanInput, ScanReport } from '../../contract/scan.js';
import { operatorKey, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

const HOUR = 3_600_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness('scan-replays-webhooks');
});
afterAll(async () => {
  await h?.close();
});

const runScan = (input: Partial<ScanInput> = {}) =>
  h.temporal.workflow.execute('compensationScan', {
    taskQueue: h.taskQueue,
    workflowId: `scan-${uid()}`,
    args: [{ schedules: [], ...input }],
  }) as Promise<ScanReport>;
const inAnHour = () => new Date(Date.now() + HOUR).toISOString();
const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } });
const dlState = async (id: string) =>
  (await h.pool.query<{ state: string }>('SELECT state FROM dead_letters WHERE id = $1', [id])).rows[0]?.state;

/** A purchase whose receipt is refused once (400): one open dead letter. */
async function deadLetteredPurchase(): Promise<{ jobId: string; deadLetterId: string }> {
  await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
  const jobId = (
    await h.submit('purchase', { amountCents: 900, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'buyer@example.com' })
  ).body.jobId as string;
  const job = await h.waitForStatus(jobId, 'dead_lettered');
  return { jobId, deadLetterId: job.deadLetterId as string };
}

describe('compensation scan: replays left open by their replay request', () => {
  it("ends a replay whose request was terminated while its job ran, from the job's own outcome", async () => {
    const { jobId, deadLetterId } = await deadLetteredPurchase();
    await h.simFault({ path: '/v1/receipts', times: 1, status: 200, delayMs: 4_000 }); // the replay job is still running...
    const r = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId] } });
    expect(r.status).toBe(202);
    const replayJobId = `${jobId}-replay-1`;
    await waitFor(
      'the replay job to run',
      async () =>
        (await dlState(deadLetterId)) === 'replaying' &&
        (
          await h.temporal.workflow
            .getHandle(replayJobId)
            .describe()
            .catch(() => undefined)
        )?.status.name === 'RUNNING',
    );
    await h.temporal.workflow.getHandle(r.body.replayId).terminate('operator terminated the replay request'); // ...when its request dies

    await h.waitForStatus(replayJobId, 'succeeded');
    await h.temporal.workflow.getHandle(replayJobId).result(); // its row is written just before the workflow closes
    expect(await dlState(deadLetterId)).toBe('replaying'); // nobody else ends it

    expect(await runScan({ now: inAnHour() })).toMatchObject({ replaysFinished: 1, replaysStarted: 0, errors: 0 });
    expect(await runScan({ now: inAnHour() })).toMatchObject({ replaysFinished: 0, replaysStarted: 0 });
    const d = (await admin(`/v1/dead-letters/${deadLetterId}`)).body;
    expect(d.state).toBe('replayed');
    expect(d.actions.map((a: any) => a.action)).toEqual(['recorded', 'replay_requested', 'replay_started', 'replay_succeeded']);
    expect(d.actions.at(-1)).toMatchObject({ actor: 'alice', details: { replayJobId, recordedBy: 'compensation scan' } });
  });

  it('starts a replay job its request claimed but never started, as a replay, then ends the replay', async () => {
    const { jobId, deadLetterId } = await deadLetteredPurchase();
    // What a request terminated between `prepareReplay` and `startChild` leaves: claimed, no workflow.
    const dl = createDeadLetterActivities({ pool: h.pool, log: h.log, codeVersion: 'test', jobs: defaultJobRegistry });
    const prep = await dl.prepareReplay({ deadLetterId, replayId: `replay-lost-${uid()}`, actor: 'alice' });
    expect(prep).toMatchObject({ kind: 'start', replayJobId: `${jobId}-replay-1` });
    const replayJobId = `${jobId}-replay-1`;

    // Within the grace period it is left alone; the unstarted-intents repair never sees it.
    expect(await runScan({ now: new Date().toISOString() })).toMatchObject({ replaysStarted: 0, replaysFinished: 0, intentsStarted: 0 });
    expect(await runScan({ now: inAnHour() })).toMatchObject({ replaysStarted: 1, replaysFinished: 0, intentsStarted: 0, errors: 0 });
    const job = await h.waitForStatus(replayJobId, 'succeeded');
    expect(job.replayOf).toBe(jobId);
    await h.temporal.workflow.getHandle(replayJobId).result();
    // It ran in the original's effect scope: the charge was reused, only the receipt was sent.
    const sim = await h.simEffects();
    expect(sim.byKey[effectKeyFor(jobId, 'charge')]).toMatchObject({ applied: 1 });
    expect(sim.byKey[effectKeyFor(replayJobId, 'charge')]).toBeUndefined();

    expect(await runScan({ now: inAnHour() })).toMatchObject({ replaysStarted: 0, replaysFinished: 1 });
    expect(await runScan({ now: inAnHour() })).toMatchObject({ replaysStarted: 0, replaysFinished: 0 });
    expect(await dlState(deadLetterId)).toBe('replayed');
  });
});

describe('compensation scan: webhooks stuck pending_signal', () => {
  it("signals the job again, once; a closed job's delivery becomes job_closed", async () => {
    await h.simFault({ path: '/v1/transcriptions', dropWebhooks: 1 }); // the job waits for a webhook that never comes by itself
    const jobId = (await h.submit('transcribe', { audioUrl: `https://example.com/audio-${uid()}.wav` })).body.jobId as string;
    const transcriptionId = await waitFor(
      'the transcription ID',
      async () =>
        (
          await h.pool.query<{ provider_id: string | null }>('SELECT provider_id FROM effects WHERE effect_key = $1', [
            effectKeyFor(jobId, 'transcribe'),
          ])
        ).rows[0]?.provider_id ?? undefined,
    );
    // A webhook recorded and routed, whose signal failed (Temporal was down) and was never redelivered.
    const webhookId = `msg_${uid()}`;
    const stuck = (id: string, job: string) =>
      recordDelivery(h.pool, {
        source: 'sim',
        webhookId: id,
        eventType: 'transcription.completed',
        subject: transcriptionId,
        payload: { id: transcriptionId, status: 'completed', text: 'from the stuck webhook' },
        jobId: job,
        outcome: 'pending_signal',
      });
    await stuck(webhookId, jobId);
    const outcome = async (id: string) =>
      (await h.pool.query('SELECT outcome FROM webhook_deliveries WHERE webhook_id = $1', [id])).rows[0]?.outcome;

    expect((await runScan({ now: new Date().toISOString() })).webhooksResignalled).toBe(0); // within the grace period
    expect(await runScan({ now: inAnHour() })).toMatchObject({ webhooksResignalled: 1, errors: 0 });
    expect(await outcome(webhookId)).toBe('signalled');
    expect((await runScan({ now: inAnHour() })).webhooksResignalled).toBe(0);
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.result).toMatchObject({ completedVia: 'webhook', webhookId, text: 'from the stuck webhook' });

    // The job has finished: a delivery still pending for it has nothing left to do.
    const late = `msg_${uid()}`;
    await stuck(late, jobId);
    expect(await runScan({ now: inAnHour() })).toMatchObject({ webhooksResignalled: 0, errors: 0 });
    expect(await outcome(late)).toBe('job_closed');

    const runs = await h.pool.query<{ n: number }>('SELECT coalesce(sum(webhooks_resignalled), 0)::int AS n FROM scan_runs');
    expect(runs.rows[0]!.n).toBe(1);
  });
});
