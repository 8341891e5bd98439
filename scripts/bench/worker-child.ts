// A worker in a process of its own, so the memory measurement can read its RSS from
// /proc/<pid>/status. Like workers/main.ts, plus what the measurement needs: the number of
// activity slots (1,000 jobs run at once only with 1,000 slots), a prebuilt bundle file
// (bundling here would put webpack's heap into the figure), and for the baseline's worker an
// in-flight count printed as JSON lines, with this process's Postgres counters (pg-probe.ts);
// a line on stdin asks for a report at once (`{"seq": n, ...}`); `commits2` first times two
// one-row commits on the product's own pool (the effects section's in-process baseline: the same
// client stack and event loop as the statements it is compared with). Lines are handled in order.
// Settings come as one JSON argument from the bench.
import { createInterface } from 'node:readline';
import { NativeConnection, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import type { ConcurrencyLimits, JobType } from '../../contract/job-types.js';
import { createQueueWorker } from '../../workers/worker.js';
import { scriptServerSecret } from '../../lib/secret.js';
import { createPayloadCodec, parsePayloadCodecKeys } from '../../lib/payload-codec.js';
import { startTracing } from '../../lib/tracing.js';
import { createBareActivities, type BareCounter } from './bare-activities.js';
import { writeFileSync } from 'node:fs';
import { captureStatements, installPgProbe, snapshotPg } from './pg-probe.js';

export interface ChildSettings {
  kind: 'product' | 'bare';
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  bundlePath: string;
  activitySlots: number;
  databaseUrl?: string;
  providerUrl?: string;
  limits?: Record<JobType, ConcurrencyLimits>;
  /** `PAYLOAD_CODEC_KEYS` of the product worker (the codec section); default none. */
  payloadCodecKeys?: string;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` of the product worker (the tracing section, with a bundle that has the workflow interceptors): tracing on; default off. */
  tracingEndpoint?: string;
}

const s = JSON.parse(process.argv[2] ?? '{}') as ChildSettings;
scriptServerSecret(process.env); // the parent's (scripts/bench/stack.ts put it in the environment)
installPgProbe();
Runtime.install({ logger: new DefaultLogger('ERROR') });
const log = createLogger('bench-worker', 'silent');
if (s.tracingEndpoint) await startTracing({ serviceName: 'bench-worker', env: { OTEL_EXPORTER_OTLP_ENDPOINT: s.tracingEndpoint } });
const connection = await NativeConnection.connect({ address: s.temporalAddress });
const counter: BareCounter = { inFlight: 0, peak: 0, completed: 0 };
const pool = s.kind === 'product' ? createPool(s.databaseUrl!, log) : undefined;
const worker =
  s.kind === 'product'
    ? await createQueueWorker({
        connection,
        namespace: s.namespace,
        taskQueue: s.taskQueue,
        pool: pool!,
        providerUrl: s.providerUrl!,
        log,
        codeVersion: 'bench',
        concurrencyLimits: s.limits,
        workflowBundle: { codePath: s.bundlePath },
        maxConcurrentActivityTaskExecutions: s.activitySlots,
        identity: `${process.pid}@bench-child`,
        payloadCodec: s.payloadCodecKeys ? createPayloadCodec(parsePayloadCodecKeys(s.payloadCodecKeys)) : undefined,
      })
    : await Worker.create({
        connection,
        namespace: s.namespace,
        taskQueue: s.taskQueue,
        workflowBundle: { codePath: s.bundlePath },
        activities: createBareActivities(counter),
        maxConcurrentActivityTaskExecutions: s.activitySlots,
        shutdownGraceTime: '10s',
      });
/** The last `commits2` probe's time (ms). */
let commits2Ms: number | undefined;
const send = (seq?: number) =>
  process.stdout.write(
    `${JSON.stringify({ ...counter, ...snapshotPg(), ...(commits2Ms !== undefined ? { commits2Ms } : {}), ...(seq ? { seq } : {}) })}\n`,
  );
const report = setInterval(() => send(), 250);
// `capture` starts recording statements, `dump <file>` writes them (for EXPLAIN) and stops.
let stopCapture: (() => unknown[]) | undefined;
async function handle(line: string): Promise<void> {
  if (line === 'capture') stopCapture = captureStatements();
  else if (line.startsWith('dump ')) writeFileSync(line.slice(5), JSON.stringify(stopCapture?.() ?? []));
  else if (line === 'commits2' && pool) {
    commits2Ms = undefined; // a failed probe leaves no figure behind
    const t0 = performance.now();
    await pool.query('INSERT INTO bench_one_row (v) VALUES (1)');
    await pool.query('INSERT INTO bench_one_row (v) VALUES (2)');
    commits2Ms = performance.now() - t0;
  }
  send(Number(line) || undefined);
}
let handling = Promise.resolve();
const requests = createInterface({ input: process.stdin }).on('line', (line) => {
  handling = handling
    .then(() => handle(line))
    .catch((err: Error) => {
      process.stderr.write(`${err.message}\n`);
    });
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => worker.shutdown());
process.stdout.write('READY\n');
await worker.run();
clearInterval(report);
requests.close();
process.stdin.destroy();
await connection.close();
await pool?.end();
