// Traces against a real Jaeger (v1.75 all-in-one, built once into the cache: scripts/lib/jaeger.ts):
// a job submitted over POST /v1/jobs has one trace, found through Jaeger's query API by the
// job's ID and by the trace ID its timeline shows, holding the intake span, the workflow start
// and run, the step's activity and its upstream call, each the child of the one before.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpUpstream } from '../../activities/http-upstream.js';
import { currentTraceId, startTracing, stopTracing, tracingRuntime, withSpan } from '../../lib/tracing.js';
import { jobTimeline } from '../../services/timeline.js';
import { startJaeger, type RunningJaeger } from '../../scripts/lib/jaeger.js';
import { startHarness, waitFor, type Harness } from '../support/harness.js';

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  startTime: number;
  tags: { key: string; value: unknown }[];
}

const SERVICE = `durable-jobs-traces-test`;
let jaeger: RunningJaeger;
let h: Harness;

beforeAll(async () => {
  // A first build takes minutes (progress printed); later runs find the cached binary.
  jaeger = await startJaeger((m) => console.log(`[jaeger] ${m}`));
  expect(await startTracing({ serviceName: SERVICE, env: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint } })).toBe(true);
  h = await startHarness('traces-jaeger');
}, 30 * 60_000);

afterAll(async () => {
  await h?.close();
  await stopTracing();
  await jaeger?.stop();
});

/** The trace's spans once every wanted operation is in it (spans arrive in batches). */
async function traceSpans(traceId: string, wanted: RegExp[]): Promise<JaegerSpan[]> {
  return waitFor(`trace ${traceId} in Jaeger with ${wanted.join(', ')}`, async () => {
    await tracingRuntime()?.processor.forceFlush();
    const res = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
    if (!res.ok) return undefined;
    const spans = ((await res.json()) as { data: { spans: JaegerSpan[] }[] }).data[0]?.spans ?? [];
    return wanted.every((w) => spans.some((s) => w.test(s.operationName))) ? spans : undefined;
  });
}

describe('traces in Jaeger', () => {
  it('one trace per job: intake -> workflow start -> run -> step activity -> upstream call, found by job ID and trace ID', async () => {
    const r = await h.submit('summarize', { text: 'Traced from the intake to the upstream.' });
    expect(r.status).toBe(202);
    const jobId = r.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');

    const timeline = await jobTimeline(
      { pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, traceUiUrl: `${jaeger.queryUrl}/trace/{traceId}` },
      jobId,
    );
    const traceId = timeline.trace?.traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(timeline.trace?.url).toBe(`${jaeger.queryUrl}/trace/${traceId}`);

    const spans = await traceSpans(traceId!, [
      /^durable-jobs submitJob$/,
      /^StartWorkflow:/,
      /^RunWorkflow:/,
      /^RunActivity:/,
      /^POST provider$/,
    ]);
    const byId = new Map(spans.map((s) => [s.spanID, s]));
    const parentOf = (s: JaegerSpan) => byId.get(s.references.find((x) => x.refType === 'CHILD_OF')?.spanID ?? '');
    // From the upstream call up to the root, each span's parent is the next link of the chain.
    const chain: JaegerSpan[] = [];
    for (let s: JaegerSpan | undefined = spans.find((x) => x.operationName === 'POST provider'); s; s = parentOf(s)) chain.unshift(s);
    expect(chain.map((s) => s.operationName.replace(/:.*/, ':'))).toEqual([
      'durable-jobs submitJob',
      'StartWorkflow:',
      'RunWorkflow:',
      'StartActivity:',
      'RunActivity:',
      'POST provider',
    ]);
    for (let i = 1; i < chain.length; i++) expect(chain[i]!.startTime).toBeGreaterThanOrEqual(chain[i - 1]!.startTime);
    const tag = (s: JaegerSpan, k: string) => s.tags.find((t) => t.key === k)?.value;
    expect(tag(chain[0]!, 'jobId')).toBe(jobId);
    expect(tag(chain[4]!, 'temporalWorkflowId')).toBe(jobId);

    // Found by the job's ID too: Jaeger's search by service and tag.
    const search = await fetch(
      `${jaeger.queryUrl}/api/traces?service=${SERVICE}&tags=${encodeURIComponent(JSON.stringify({ jobId }))}&limit=5`,
    );
    const found = ((await search.json()) as { data: { traceID: string }[] }).data.map((t) => t.traceID);
    expect(found).toEqual([traceId]);
  });

  it("sends the active trace's traceparent to an upstream", async () => {
    const seen: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers.traceparent as string | undefined);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const api = httpUpstream({ name: 'probe', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const traceId = await withSpan('probe-parent', {}, async () => {
        await api.exchange({ path: '/v1/things', body: {}, timeoutMs: 10_000 });
        return currentTraceId();
      });
      expect(seen).toHaveLength(1);
      // 00-<trace ID>-<the upstream call's span ID>-<flags>: the call's span, in the caller's trace.
      expect(seen[0]).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
    } finally {
      server.close();
    }
  });
});
