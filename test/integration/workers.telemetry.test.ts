// A worker process's own telemetry: with WORKER_METRICS_PORT it serves the Temporal core's
// metrics and its own on one Prometheus endpoint, and the SDK's log lines come out as pino JSON.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let h: Harness;
let worker: WorkerProcess | undefined;
beforeAll(async () => {
  h = await startHarness('telemetry', { workers: 0 });
});
afterAll(async () => {
  await worker?.kill();
  await h?.close();
});

describe('worker telemetry', () => {
  it('serves the core metrics and its own on WORKER_METRICS_PORT; SDK logs are pino JSON', async () => {
    const port = await freePort();
    worker = await spawnWorker(h, { WORKER_METRICS_PORT: String(port) });
    const r = await h.submit('summarize', { text: 'Metrics, please. Then more.' });
    await h.waitForStatus(r.body.jobId, 'succeeded');
    let text = '';
    // The core publishes a poll's and a task's figures once they happened: wait for them.
    const deadline = Date.now() + 60_000;
    while (!/temporal_workflow_task_execution_latency|temporal_activity_execution_latency/.test(text) && Date.now() < deadline) {
      text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      if (!/temporal_workflow_task_execution_latency|temporal_activity_execution_latency/.test(text))
        await new Promise((res) => setTimeout(res, 250));
    }
    expect(text).toMatch(
      /^durable_jobs_worker_info\{task_queues="[^"]+",job_types="summarize,purchase,transcribe,digest",code_version="[^"]+"\} 1$/m,
    );
    expect(text).toMatch(/^durable_jobs_worker_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^temporal_(workflow_task|activity)_execution_latency/m);
    expect(text).toMatch(/^temporal_num_pollers/m);
    // Every line the worker wrote is JSON (pino), the SDK's among them, tagged as such.
    const lines = worker.output().trim().split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((l) => JSON.parse(l)).some((l: { component?: string }) => l.component === 'temporal-sdk')).toBe(true);
  });

  it('refuses a WORKER_METRICS_PORT that is not a port, naming it', async () => {
    const bad = await spawnWorker(h, { WORKER_METRICS_PORT: 'eighty' }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(bad).toMatch(/WORKER_METRICS_PORT must be a port number/);
  });
});
