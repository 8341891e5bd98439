// Jaeger (v1.75.0 `cmd/jaeger`: the v2 all-in-one, an OpenTelemetry Collector build) for the
// traces tests and the bench's tracing row: built once into ~/.cache/durable-jobs/jaeger/ like
// the Temporal CLI (scripts/lib/go-binary.ts), then started on free loopback ports with a config
// of its own: OTLP/HTTP in, in-memory storage, the query API (and UI) out.
//
// Why a tool of a small module: Jaeger's go.mod `replace`s github.com/Shopify/sarama, and
// `go install pkg@version` refuses a module with replace directives; a module of ours that
// requires the tool and repeats that replace builds the same binary.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import { resolveGoBinary, type GoBinarySpec } from './go-binary.js';

export const JAEGER: GoBinarySpec = {
  name: 'jaeger',
  label: 'Jaeger',
  goPackage: 'github.com/jaegertracing/jaeger/cmd/jaeger',
  version: 'v1.75.0',
  cacheDir: 'jaeger',
  envVar: 'JAEGER_PATH',
  buildHint: 'about 5 minutes the first time on a 2-core machine',
  versionArgs: ['version'],
  toolModule: { replaces: ['github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0'] },
};

/** The binary's path, building it the first time (progress through `log`). */
export function resolveJaeger(log: (msg: string) => void = console.log): Promise<string> {
  return resolveGoBinary(JAEGER, { explicitPath: process.env[JAEGER.envVar], log });
}

/**
 * The v2 config: OTLP/HTTP only (no gRPC, Jaeger or Zipkin receivers), memory storage, the
 * query service on the given ports, and the collector's own telemetry off (it would take 8888).
 * A short batch timeout: a test waits for a trace, not for the default 200 ms batches to fill.
 */
export function jaegerConfig(p: { otlpHttp: number; queryHttp: number; queryGrpc: number }): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 20000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${p.queryHttp}
    grpc:
      endpoint: 127.0.0.1:${p.queryGrpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${p.otlpHttp}
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export interface RunningJaeger {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for it (OTLP/HTTP; the SDK appends /v1/traces). */
  otlpEndpoint: string;
  /** The query API and UI, e.g. `${queryUrl}/api/traces/{traceId}`. */
  queryUrl: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Starts Jaeger on free ports and waits until its query API answers (and so its receiver runs). */
export async function startJaeger(log: (msg: string) => void = console.log, timeoutMs = 60_000): Promise<RunningJaeger> {
  const bin = await resolveJaeger(log);
  const ports = { otlpHttp: await freePort(), queryHttp: await freePort(), queryGrpc: await freePort() };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-jaeger-'));
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, jaegerConfig(ports));
  const [cmd, args] = withParentDeathSignal(bin, ['--config', config], 'TERM');
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  trackChild(child, 'SIGTERM');
  const stderr: string[] = [];
  child.stderr?.on('data', (c: Buffer) => {
    stderr.push(c.toString('utf8'));
    if (stderr.length > 50) stderr.shift();
  });
  const queryUrl = `http://127.0.0.1:${ports.queryHttp}`;
  const stop = () => stopChild(child, dir);
  try {
    await waitReady(child, `${queryUrl}/api/services`, timeoutMs, stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  return { otlpEndpoint: `http://127.0.0.1:${ports.otlpHttp}`, queryUrl, stop };
}

async function waitReady(child: ChildProcess, url: string, timeoutMs: number, stderr: string[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`jaeger exited with code ${child.exitCode}: ${stderr.join('').slice(-2000)}`);
    const ok = await fetch(url)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`jaeger did not answer ${url} within ${timeoutMs} ms: ${stderr.join('').slice(-2000)}`);
}

async function stopChild(child: ChildProcess, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  untrackChild(child);
  await rm(dir, { recursive: true, force: true });
}
