/**
 * A worker process's own telemetry: the SDK's logs (its TypeScript side and, forwarded, its
 * Rust core's warnings) through pino with the product's redaction, and, when
 * `WORKER_METRICS_PORT` is set, one Prometheus endpoint with the Temporal core's metrics (slots,
 * schedule-to-start, sticky cache, poll failures) and this process's own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  makeTelemetryFilterString,
  type Logger as SdkLogger,
  type LogLevel,
  type LogMetadata,
  type RuntimeOptions,
} from '@temporalio/worker';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';

/** `WORKER_METRICS_PORT` (and `WORKER_METRICS_HOST`, default 127.0.0.1), or undefined when unset. */
export function workerMetricsAddress(env: NodeJS.ProcessEnv): { host: string; port: number } | undefined {
  const raw = env.WORKER_METRICS_PORT;
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new ConfigError(`WORKER_METRICS_PORT must be a port number (0-65535, 0 picks a free one); got "${raw.slice(0, 20)}"`);
  return { host: env.WORKER_METRICS_HOST || '127.0.0.1', port };
}

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** The SDK's logger interface over pino: one JSON line per SDK message, redacted like ours. */
export function sdkLogger(log: Logger): SdkLogger {
  const sdk = log.child({ component: 'temporal-sdk' });
  const write = (level: LogLevel, message: string, meta?: LogMetadata) => sdk[LEVELS[level]](meta ?? {}, message);
  return {
    log: write,
    trace: (m, meta) => write('TRACE', m, meta),
    debug: (m, meta) => write('DEBUG', m, meta),
    info: (m, meta) => write('INFO', m, meta),
    warn: (m, meta) => write('WARN', m, meta),
    error: (m, meta) => write('ERROR', m, meta),
  };
}

/** Where the core's own exporter listens: loopback, a port of its own; the public endpoint merges it. */
async function freeLoopbackPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface WorkerTelemetry {
  runtime: RuntimeOptions;
  /** Starts the public endpoint (when configured) once the worker knows its queues and types. */
  serve(info: { taskQueues: readonly string[]; jobTypes: readonly string[]; codeVersion: string }): Promise<Server | undefined>;
}

export async function workerTelemetry(env: NodeJS.ProcessEnv, log: Logger): Promise<WorkerTelemetry> {
  const address = workerMetricsAddress(env);
  const corePort = address ? await freeLoopbackPort() : undefined;
  const runtime: RuntimeOptions = {
    // One owner of the signals decides when the process exits (lib/shutdown.ts).
    shutdownSignals: [],
    logger: sdkLogger(log),
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      ...(corePort
        ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${corePort}`, countersTotalSuffix: true, useSecondsForDurations: true } } }
        : {}),
    },
  };
  return {
    runtime,
    async serve(info) {
      if (!address || !corePort) return undefined;
      // prom-client is the server's peer dependency: loaded only by a worker asked for metrics.
      const { collectDefaultMetrics, Gauge, Registry } = await import('prom-client');
      const registry = new Registry();
      collectDefaultMetrics({ register: registry, prefix: 'durable_jobs_worker_' });
      new Gauge({
        name: 'durable_jobs_worker_info',
        help: 'This worker process: its task queues, job types and code version (value 1).',
        labelNames: ['task_queues', 'job_types', 'code_version'],
        registers: [registry],
      }).set({ task_queues: info.taskQueues.join(','), job_types: info.jobTypes.join(','), code_version: info.codeVersion }, 1);
      const server = createServer((req, res) => {
        if (req.url !== '/metrics') {
          res.writeHead(404).end('only /metrics\n');
          return;
        }
        void (async () => {
          const core = await fetch(`http://127.0.0.1:${corePort}/metrics`)
            .then((r) => r.text())
            .catch((err: Error) => `# the Temporal core's exporter did not answer: ${err.message.replace(/\n/g, ' ')}\n`);
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(`${await registry.metrics()}\n${core}`);
        })();
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(address.port, address.host, resolve);
      });
      server.unref();
      log.info({ metrics: `http://${address.host}:${(server.address() as AddressInfo).port}/metrics` }, 'worker metrics served');
      return server;
    },
  };
}
