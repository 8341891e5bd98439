import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_WAIT_MS } from '../../jobs/transcribe/workflow.js';
import { ADMIN_KEY, startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('transcribe');
});
afterAll(async () => {
  await h?.close();
});

const audio = () => `https://example.com/audio-${uid()}.wav`;
const deliveriesFor = async (transcriptionId: string) =>
  (
    await h.pool.query<{ webhook_id: string; outcome: string; job_id: string | null }>(
      'SELECT webhook_id, outcome, job_id FROM webhook_deliveries WHERE subject = $1',
      [transcriptionId],
    )
  ).rows;
const admin = (source: string, id: string) =>
  h.api(`/v1/admin/webhook-deliveries/${source}/${id}`, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });

describe('transcribe job', () => {
  it("completes on the simulator's signed webhook, with one transcription at the provider", async () => {
    const audioUrl = audio();
    const r = await h.submit('transcribe', { audioUrl });
    expect(r.status).toBe(202);
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.result).toMatchObject({ text: `transcript of ${audioUrl}`, completedVia: 'webhook' });
    const rows = await deliveriesFor(done.result.transcriptionId);
    expect(rows).toEqual([{ webhook_id: done.result.webhookId, outcome: 'signalled', job_id: r.body.jobId }]);
    expect((await admin('sim', done.result.webhookId)).body).toMatchObject({
      eventType: 'transcription.completed',
      jobId: r.body.jobId,
      timesReceived: 1,
    });
    expect((await h.simEffects()).byKey[`${r.body.jobId}:transcribe`]).toMatchObject({ applied: 1 });
  });

  it('falls back to polling the provider when the webhook never comes', async () => {
    await h.simFault({ path: '/v1/transcriptions', dropWebhooks: 1 });
    const audioUrl = audio();
    const started = Date.now();
    const r = await h.submit('transcribe', { audioUrl });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded', 'a', DEFAULT_WEBHOOK_WAIT_MS + 90_000);
    expect(done.result).toMatchObject({ text: `transcript of ${audioUrl}`, completedVia: 'polling', webhookId: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(DEFAULT_WEBHOOK_WAIT_MS);
    expect(await deliveriesFor(done.result.transcriptionId)).toEqual([]);
    expect((await h.simEffects()).byKey[`${r.body.jobId}:transcribe`]).toMatchObject({ applied: 1 });
  });

  it('still gets a webhook that arrives before the job has stored its provider ID', async () => {
    // The provider starts the work, then holds its 202 for 3 s: its webhook (after 300 ms)
    // arrives while the job does not know its transcription ID yet.
    await h.simFault({ path: '/v1/transcriptions', status: 200, delayMs: 3_000 });
    const audioUrl = audio();
    const r = await h.submit('transcribe', { audioUrl });
    const done = await h.waitForStatus(r.body.jobId, 'succeeded');
    expect(done.result).toMatchObject({ text: `transcript of ${audioUrl}`, completedVia: 'webhook' });
    expect(await deliveriesFor(done.result.transcriptionId)).toEqual([
      { webhook_id: done.result.webhookId, outcome: 'claimed', job_id: r.body.jobId },
    ]);
  });

  it('refuses an input without an http(s) audioUrl', async () => {
    for (const input of [{}, { audioUrl: 'ftp://example.com/a.wav' }, { audioUrl: 'not a url' }, { audioUrl: audio(), extra: 1 }]) {
      const r = await h.submit('transcribe', input);
      expect(r.status, JSON.stringify(input)).toBe(400);
      expect(r.body.type).toBe('urn:durable-jobs:problem:validation-error');
    }
  });
});
