import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('webhooks-replay-routing');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('alice')}` } });

describe('webhooks for a replayed job', () => {
  it('go to the replay job that runs the effect, not to the closed original', async () => {
    // The provider refuses the transcription once: the job dead-letters with its effect failed.
    await h.simFault({ path: '/v1/transcriptions', times: 1, status: 400 });
    const jobId = (await h.submit('transcribe', { audioUrl: `https://example.com/audio-${uid()}.wav` })).body.jobId as string;
    const { deadLetterId } = await h.waitForStatus(jobId, 'dead_lettered');

    // The replay calls the provider again (same effect key, the original's scope); its webhook must reach the replay job.
    const r = await admin('/v1/dead-letters/replay', { body: { ids: [deadLetterId] } });
    expect(r.status).toBe(202);
    const replayJobId = `${jobId}-replay-1`;
    const done = await h.waitForStatus(replayJobId, 'succeeded', 'a', 120_000);
    expect(done.result).toMatchObject({ completedVia: 'webhook' });
    const rows = (
      await h.pool.query('SELECT webhook_id, outcome, job_id FROM webhook_deliveries WHERE subject = $1', [done.result.transcriptionId])
    ).rows;
    expect(rows).toEqual([
      { webhook_id: done.result.webhookId, outcome: expect.stringMatching(/^(signalled|claimed)$/), job_id: replayJobId },
    ]);
    // The replay request records the outcome right after the job's own row says succeeded.
    await waitFor(
      'the dead letter to be replayed',
      async () => (await admin(`/v1/dead-letters/${deadLetterId}`)).body.state === 'replayed',
    );
  });
});
