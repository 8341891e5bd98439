import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollersProbe, readyzProbe, stackWaitingFor, waitForStack } from '../../scripts/lib/stack-ready.js';
import { createServer } from 'node:net';
import { startHarness, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('stack-ready', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

describe("npm start's wait for the stack, against a real API and Temporal", () => {
  it("sees the API answer but no worker, then returns once this run's worker polls", async () => {
    const probes = { readyz: readyzProbe(h.baseUrl), pollers: pollersProbe(h.temporal, h.taskQueue) };
    const expectation = { workers: 1, ownIdentities: ['stack-ready-ours'], taskQueue: h.taskQueue };
    expect(stackWaitingFor({ readyz: await probes.readyz(), pollers: await probes.pollers() }, expectation)).toEqual([
      `a worker to poll the task queue ${h.taskQueue}`,
    ]);
    // A worker that is not one of this run's (an earlier run's, which Temporal still lists for
    // minutes after it stopped) does not count.
    const earlier = await h.startWorker('stack-ready-earlier-run');
    expect(await waitForStack({ ...expectation, ownIdentities: ['stack-ready-earlier-run'], probes })).toEqual([]);
    earlier.shutdown();
    await waitFor('the earlier worker to stop', async () => earlier.getState() === 'STOPPED');
    expect(stackWaitingFor({ readyz: await probes.readyz(), pollers: await probes.pollers() }, expectation)).toEqual([
      `a worker to poll the task queue ${h.taskQueue}`,
    ]);
    await h.startWorker('stack-ready-ours');
    expect(await waitForStack({ ...expectation, probes })).toEqual([]);
  });

  it('says the API is not listening when nothing answers on its port', async () => {
    // A port that was free a moment ago: nothing listens on it.
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
      });
    });
    const closed = readyzProbe(`http://127.0.0.1:${port}`);
    expect(await closed()).toBe('not listening yet');
  });
});
