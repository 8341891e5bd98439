// The Web UI server v2.54.1 that runs beside temporal-server (issue 40 §1): started by
// scripts/lib/temporal-ui.ts against this suite's Temporal frontend (it talks gRPC to any),
// it serves the UI and reads the namespace's workflows through its own API.
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/lib/dev-server.js';
import { resolveTemporalUiServer, startTemporalUi, type TemporalUi } from '../../scripts/lib/temporal-ui.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
let ui: TemporalUi | undefined;
let dir: string;
beforeAll(async () => {
  h = await startHarness('temporal-ui');
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'durable-jobs-ui-'));
  ui = await startTemporalUi({
    binary: await resolveTemporalUiServer({ log: (m) => console.log(`[temporal-ui] ${m}`) }),
    rootDir: dir,
    temporalAddress: inject('temporalAddress'),
    port: await freePort(),
    namespace: h.temporal.options.namespace,
  });
}, 600_000);
afterAll(async () => {
  await ui?.stop();
  await h?.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('the Temporal Web UI server beside the engine', () => {
  it("serves the UI on loopback and lists a job's workflow through its API", async () => {
    const page = await fetch(`${ui!.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const r = await h.submit('summarize', { text: `Seen in the Web UI ${uid()}.` });
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');
    const namespace = h.temporal.options.namespace;
    const found = await waitFor('the job in the UI API', async () => {
      const res = await fetch(`${ui!.url}/api/v1/namespaces/${namespace}/workflows/${encodeURIComponent(jobId)}`);
      if (res.status !== 200) return undefined;
      return (await res.json()) as { workflowExecutionInfo?: { execution?: { workflowId?: string }; status?: string } };
    });
    expect(found.workflowExecutionInfo?.execution?.workflowId).toBe(jobId);
  });
});
