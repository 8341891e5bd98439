// Tracing on or off must not change what a workflow does ("pick once, it changes histories"):
// OpenTelemetry's workflow interceptors add only headers and an SDK flag, never a command. So
// every recorded history (all taken with tracing off) replays on a bundle with the interceptors
// and the worker's tracing options, and a history taken with tracing on replays on a bundle
// without them. The spans go to a port nobody listens on: no Jaeger needed here.
import { readdir, readFile } from 'node:fs/promises';
import proto from '@temporalio/proto';
import { Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobRegistry } from '../../jobs/index.js';
import { startTracing, stopTracing } from '../../lib/tracing.js';
import type { RecordedHistory } from '../../scripts/lib/record-histories.js';
import { bundleWorkflows } from '../../workers/worker.js';
import { tracingWorkerOptions } from '../../workers/tracing.js';
import { startHarness, workflowBundle, type Harness } from '../support/harness.js';

const DIR = new URL('../fixtures/histories/', import.meta.url);
const recorded: RecordedHistory[] = await Promise.all(
  (await readdir(DIR))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map(async (f) => JSON.parse(await readFile(new URL(f, DIR), 'utf8')) as RecordedHistory),
);

let h: Harness;
let traced: WorkflowBundleOption;
beforeAll(async () => {
  expect(await startTracing({ serviceName: 'replay-tracing-test', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' } })).toBe(true);
  traced = await workflowBundle(); // the harness's workers run this one too
  h = await startHarness('replay-tracing');
}, 600_000);
afterAll(async () => {
  await h?.close();
  await stopTracing();
});

describe('histories replay with tracing on and off', () => {
  it('the traced bundle holds the OpenTelemetry workflow interceptors', () => {
    expect((traced as { code: string }).code).toContain('OpenTelemetryInboundInterceptor');
  });

  it.each(recorded.map((r) => [r.workflowType, r] as const))('%s (recorded with tracing off) replays with tracing on', async (_t, r) => {
    const history = proto.temporal.api.history.v1.History.decode(Buffer.from(r.history, 'base64'));
    await expect(
      Worker.runReplayHistory({ workflowBundle: traced, ...(await tracingWorkerOptions()) }, history, r.workflowId),
    ).resolves.toBeUndefined();
  });

  it('a job run with tracing on replays with tracing off', async () => {
    const r = await h.submit('summarize', { text: 'Recorded with tracing on.' });
    expect(r.status).toBe(202);
    await h.waitForStatus(r.body.jobId, 'succeeded');
    const history = await h.temporal.workflow.getHandle(r.body.jobId).fetchHistory();
    const scheduled = history.events?.find((e) => e.activityTaskScheduledEventAttributes)?.activityTaskScheduledEventAttributes;
    expect(Object.keys(scheduled?.header?.fields ?? {}), 'the trace travels in the activity headers').toContain('_tracer-data');
    await stopTracing();
    const plain = await bundleWorkflows(defaultJobRegistry);
    expect((plain as { code: string }).code).not.toContain('OpenTelemetryInboundInterceptor');
    await expect(Worker.runReplayHistory({ workflowBundle: plain }, history, r.body.jobId)).resolves.toBeUndefined();
  });
});
