// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) costs nothing: a job runs end to end while no
// OpenTelemetry SDK module and no Temporal interceptor package is loaded, the bundle has no
// workflow interceptors, the client and worker none, nothing is recorded as the job's trace,
// and the upstream hears no traceparent.
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, tracingClientInterceptors, tracingRuntime, traceHeaders } from '../../lib/tracing.js';
import { jobTimeline } from '../../services/timeline.js';
import { tracingBundleOptions, tracingWorkerOptions } from '../../workers/tracing.js';
import { startHarness, workflowBundle, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  expect(await startTracing({ serviceName: 'off', env: {} })).toBe(false);
  h = await startHarness('traces-off');
});
afterAll(async () => {
  await h?.close();
});

/** Modules of these packages that this process has loaded (ESM imports of CommonJS land in the require cache too). */
const loaded = (pattern: RegExp) => Object.keys(createRequire(import.meta.url).cache).filter((p) => pattern.test(p));

describe('tracing off', () => {
  it('runs a job with no SDK loaded, no interceptors, no trace recorded', async () => {
    const r = await h.submit('summarize', { text: 'Not traced.' });
    expect(r.status).toBe(202);
    await h.waitForStatus(r.body.jobId, 'succeeded');

    expect(tracingRuntime()).toBeUndefined();
    expect(tracingClientInterceptors()).toEqual([]);
    expect(tracingBundleOptions()).toEqual({});
    expect(await tracingWorkerOptions()).toEqual({});
    expect(traceHeaders()).toEqual({});
    expect((await workflowBundle()) as { code: string }).not.toHaveProperty(
      'code',
      expect.stringContaining('OpenTelemetryInboundInterceptor'),
    );
    expect(loaded(/@opentelemetry[\\/](sdk-trace|exporter-trace|resources)|interceptors-opentelemetry/)).toEqual([]);

    const timeline = await jobTimeline({ pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue }, r.body.jobId);
    expect(timeline.trace).toBeNull();
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_traces')).rows[0].n).toBe(0);
  });
});
