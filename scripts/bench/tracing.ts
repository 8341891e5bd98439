// What traces cost (issue 40 §3): the same `summarize` jobs end to end with tracing on and off in
// the same run. On: the intake in this process runs its submit span and the Temporal client
// interceptor, the worker (a process of its own, bundled with the workflow interceptors) its
// workflow, activity and upstream spans, all exported over OTLP/HTTP to a local sink that
// accepts and drops (the exporter's real work: serialising and POSTing batches; no Jaeger
// storage in the figure). Off: nothing loaded. Sides alternate (AB, BA, ...) and the ratio is
// the median of the per-repeat ratios. Tracing is process-wide, so this process turns it on
// only around each "on" repeat.
import fs from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { upsertTenant } from '../../store/tenants.js';
import { startTracing, stopTracing, tracingClientInterceptors } from '../../lib/tracing.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, row, spread, type BenchRow } from './stats.js';
import { runSummarize } from './throughput.js';
import { bundleWorkflows } from '../../workers/worker.js';

type Side = 'off' | 'on';
const SIDES: Side[] = ['off', 'on'];

/** An OTLP/HTTP endpoint that reads each batch and answers 200: counts requests and bytes. */
async function startSink(): Promise<{ url: string; stats: { requests: number; bytes: number }; server: Server }> {
  const stats = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    stats.requests++;
    req.on('data', (c: Buffer) => (stats.bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats, server };
}

/** The product bundle with the workflow interceptors, bundled here (a child bundling under load would not start in time). */
async function tracedBundleFile(stack: BenchStack, endpoint: string): Promise<string> {
  await startTracing({ serviceName: 'bench-bundle', env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } });
  try {
    const file = path.join(stack.tmpDir, `bundle-traced-${uid()}.js`);
    await fs.writeFile(file, ((await bundleWorkflows(defaultJobRegistry)) as { code: string }).code);
    return file;
  } finally {
    await stopTracing();
  }
}

export async function measureTracing(stack: BenchStack): Promise<BenchRow[]> {
  const n = stack.quick ? 20 : 200;
  const repeats = stack.quick ? 2 : 4;
  const sink = await startSink();
  const queues: Record<Side, string> = { off: `bench-trace-off-${uid()}`, on: `bench-trace-on-${uid()}` };
  const [offWorker, onWorker] = await Promise.all([
    stack.startWorkerChild('product', queues.off),
    stack.startWorkerChild('product', queues.on, { tracingEndpoint: sink.url, bundlePath: await tracedBundleFile(stack, sink.url) }),
  ]);
  const offClient = stack.jobsClient(queues.off);
  const rates: Record<Side, number[]> = { off: [], on: [] };
  const once = async (side: Side, tag: string, count: number): Promise<number> => {
    const tenant = `bench-trace-${side}-${tag}-${uid()}`;
    await upsertTenant(stack.pool, tenant, `key-${tenant}`);
    if (side === 'off') return (await runSummarize(stack, offClient, tenant, count)).perSec;
    await startTracing({ serviceName: 'bench-intake', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } });
    const temporal = new Client({
      connection: stack.temporal.connection,
      namespace: stack.temporal.options.namespace,
      interceptors: { workflow: tracingClientInterceptors() },
    });
    const jobs = createJobsClient({ jobs: defaultJobRegistry, pool: stack.pool, temporal, taskQueue: queues.on });
    try {
      return (await runSummarize(stack, jobs, tenant, count)).perSec;
    } finally {
      await jobs.close();
      await stopTracing();
    }
  };
  try {
    for (const side of SIDES) await once(side, 'warm', Math.min(5, n));
    for (let r = 0; r < repeats; r++) {
      for (const side of alternate(SIDES, r)) rates[side].push(await once(side, String(r), n));
      stack.log(`  tracing repeat ${r + 1}/${repeats}: off ${rates.off.at(-1)!.toFixed(1)}/s, on ${rates.on.at(-1)!.toFixed(1)}/s`);
    }
  } finally {
    await offClient.close();
    await Promise.all([offWorker.stop(), onWorker.stop()]);
    sink.server.close();
  }
  return [
    row({
      id: 'tracing.summarize',
      section: 'traces',
      figure: `summarize jobs end to end with tracing on, exported over OTLP/HTTP (N=${n}, ${repeats} repeats)`,
      unit: 'jobs/s',
      value: spread(rates.on),
      baseline: { label: 'the same jobs with tracing off, same run', unit: 'jobs/s', value: spread(rates.off) },
      sense: 'higher-better',
      paired: true,
      notes: `intake span + client interceptor here, workflow/activity/upstream spans in the worker (its own process); a local sink accepts and drops (${sink.stats.requests} batches, ${Math.round(sink.stats.bytes / 1024)} KiB); sides alternate AB/BA`,
    }),
  ];
}
