import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createLogger } from '../../lib/logger.js';
import { buildApp } from '../../server/app.js';
import { ADMIN_KEY, TENANTS, startHarness, uid, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

// The contract: the raw Idempotency-Key appears nowhere, logs included; the job ID (derived
// from its hash) is how logs name the job.
let h: Harness;
let worker: WorkerProcess | undefined;
let apiLines = '';
let api: ReturnType<typeof buildApp>;
let apiUrl = '';
beforeAll(async () => {
  h = await startHarness('logs-key', { workers: 0 });
  worker = await spawnWorker(h, { LOG_LEVEL: 'trace' });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      apiLines += chunk.toString();
      done();
    },
  });
  // The product's own logger, at its most verbose, behind the product's own HTTP API.
  api = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal: h.temporal,
    jobs: h.jobs,
    log: createLogger('api', 'trace', sink),
    adminApiKey: ADMIN_KEY,
    version: 'test',
    webhookSecrets: {},
  });
  await api.listen({ port: 0, host: '127.0.0.1' });
  const addr = api.server.address();
  apiUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await api?.close();
  await worker?.kill();
  await h?.close();
});

const post = (key: string, text: string) =>
  fetch(`${apiUrl}/v1/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TENANTS.a.key}`, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'summarize', input: { text } }),
  });

describe('logs never carry the raw idempotency key', () => {
  it('through submit, replay, conflict, status reads and the worker running the job', async () => {
    const key = `order-${uid()}-RAWKEYMARKER`;
    const first = await post(key, 'Logged by job ID only.');
    expect(first.status).toBe(202);
    const { jobId } = (await first.json()) as { jobId: string };
    expect((await post(key, 'Logged by job ID only.')).status).toBe(200); // the same intent again
    expect((await post(key, 'another input')).status).toBe(422); // the key reused with another input
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.attempts).toBe(1);
    await fetch(`${apiUrl}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${TENANTS.a.key}` } });
    // The worker logged the job it ran (by job ID and effect key) before we read its output.
    const workerLines = () => worker!.output();
    await expect.poll(() => workerLines().includes(`${jobId}:summarize`), { timeout: 30_000 }).toBe(true);

    for (const [who, lines] of [
      ['api', apiLines],
      ['worker', workerLines()],
    ] as const) {
      expect(lines.length, who).toBeGreaterThan(0);
      expect(lines.includes('RAWKEYMARKER'), `${who} logged the raw key`).toBe(false);
    }
    // The API logged the requests (method, URL, status), the worker the job by its ID.
    expect(apiLines).toContain('/v1/jobs');
    expect(apiLines).toContain(jobId);
    expect(workerLines()).toContain(jobId);
  });
});
