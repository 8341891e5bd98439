import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../scripts/lib/embedded-pg.js';
import { startHarness, type Harness } from '../support/harness.js';

// A Postgres of this file's own: restarting the shared one would disturb other files.
let pgDir: string;
let pgServer: EmbeddedPg;
let h: Harness;
beforeAll(async () => {
  pgDir = await mkdtemp(path.join(os.tmpdir(), 'dj-pg-restart-'));
  await chmod(pgDir, 0o755);
  pgServer = await startEmbeddedPostgres({ dataDir: path.join(pgDir, 'data'), port: 0, persistent: false, log: () => undefined });
  h = await startHarness('pgrestart', { postgresUrl: pgServer.url });
});
afterAll(async () => {
  await h?.close();
  await pgServer?.stop();
  await rm(pgDir, { recursive: true, force: true });
});

describe('Postgres restarted mid-job', () => {
  it('the worker does not crash, the activity retries, and the job finishes once', async () => {
    // Hold the upstream's answer so the restart lands while the attempt is in flight.
    await h.simFault({ path: '/v1/summaries', times: 1, status: 200, delayMs: 3_000 });
    const r = await h.submit('summarize', { text: 'Postgres went away and came back.' });
    const key = `${r.body.jobId}:summarize`;
    await expect.poll(async () => (await h.simEffects()).byKey[key]?.applied, { timeout: 60_000, interval: 100 }).toBe(1);
    await pgServer.restart();

    const done = await h.waitForStatus(r.body.jobId, 'succeeded', 'a', 120_000);
    expect(done.result.summary).toBe('Postgres went away and came back.');
    expect((await h.simEffects()).byKey[key].applied).toBe(1);
    expect(h.workers[0]!.getState()).toBe('RUNNING');
    // The pool recovered: intake works again on the same pool.
    const next = await h.submit('summarize', { text: 'After the restart.' });
    expect(next.status).toBe(202);
    await h.waitForStatus(next.body.jobId, 'succeeded');
  });
});
