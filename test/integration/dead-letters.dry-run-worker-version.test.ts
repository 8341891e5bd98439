// The replay dry run's "changed since failure" compares a dead letter's code version with the
// code of the workers that would run the replay (the pollers of its type's task queue, by their
// build IDs), not with the API's own version: a team's worker is another build than the API.
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { replayCodeVersion } from '../../services/worker-versions.js';
import { createWorker, type DurableWorker } from '../../workers/durable-worker.js';
import { ADMIN_KEY, startHarness, uid, waitFor, workflowBundle, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

let h: Harness;
let connection: NativeConnection;
const running: Array<{ worker: DurableWorker; run: Promise<void> }> = [];
let processes: WorkerProcess[] = [];

beforeAll(async () => {
  // No harness worker: the harness's API says version "test"; the workers here say otherwise.
  h = await startHarness('dl-worker-version', { workers: 0 });
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  for (const r of running) r.worker.shutdown();
  await Promise.allSettled(running.map((r) => r.run));
  await connection?.close();
  await h?.close();
});

async function startWorker(codeVersion: string): Promise<void> {
  const worker = await createWorker({
    jobs: defaultJobRegistry,
    connection,
    pool: h.pool,
    namespace: inject('temporalNamespace'),
    taskQueue: h.taskQueue,
    providerUrl: h.sim.url,
    log: h.log,
    codeVersion,
    workflowBundle: await workflowBundle(defaultJobRegistry),
    identity: `dl-worker-version-${codeVersion}`,
  });
  running.push({ worker, run: worker.run() });
}

const dryRun = async (id: string) => {
  const r = await h.api('/v1/dead-letters/replay', {
    method: 'POST',
    body: { ids: [id], dryRun: true },
    tenant: null,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  expect(r.status).toBe(200);
  return r.body.deadLetters[0];
};

describe('the dry run compares with the code version of the workers that would run the replay', () => {
  let deadLetterId: string;

  it("reads the worker's version, not the API's: the same build is no change", async () => {
    await startWorker('acme-2.0.0');
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const r = await h.submit('purchase', { amountCents: 700, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'v@example.com' });
    const job = await h.waitForStatus(r.body.jobId, 'dead_lettered');
    deadLetterId = job.deadLetterId;

    const p = await dryRun(deadLetterId);
    expect(p.recorded.codeVersion).toBe('acme-2.0.0'); // the worker that failed it recorded its own version
    expect(p.current).toMatchObject({
      codeVersion: 'acme-2.0.0',
      codeVersionSource: 'workers',
      workerCodeVersions: ['acme-2.0.0'],
      taskQueue: h.taskQueue,
    });
    expect(p.changed.codeVersion).toBe(false); // the API's own version ("test") is not what runs the replay
  });

  it('flags a change once a worker of another build polls the queue (a replay may land on it)', async () => {
    // A worker process of the next build, as a rolling deploy starts it (`CODE_VERSION`).
    processes = [await spawnWorker(h, { CODE_VERSION: 'acme-2.1.0' })];
    const p = await waitFor('both builds to be listed as pollers', async () => {
      const q = await dryRun(deadLetterId);
      return q.current.workerCodeVersions.length === 2 ? q : undefined;
    });
    expect(p.current).toMatchObject({ codeVersion: 'acme-2.0.0, acme-2.1.0', workerCodeVersions: ['acme-2.0.0', 'acme-2.1.0'] });
    expect(p.changed.codeVersion).toBe(true);
  });

  it("falls back to the API's version, and says so, when no worker polls the queue", async () => {
    const v = await replayCodeVersion(h.temporal, `nobody-polls-${uid()}`, 'api-1.0.0');
    expect(v).toMatchObject({ codeVersion: 'api-1.0.0', codeVersionSource: 'api', workerCodeVersions: [] });
  });
});
