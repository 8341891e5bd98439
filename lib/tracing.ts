/**
 * Traces (issue 40 §3): one trace per job, from the intake (`POST /v1/jobs`, `submitJob`)
 * through the workflow, each activity and each upstream call (`traceparent` sent to the
 * upstream), exported over OTLP/HTTP.
 *
 * The switch. Tracing is on in a process only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set and its
 * entry point called `startTracing`; off, this module is all that is loaded: no OpenTelemetry
 * SDK (lib/tracing-sdk.ts is imported dynamically), no interceptors on the Temporal client or
 * worker, no workflow interceptors in the bundle, and `withSpan` calls its function straight.
 *
 * Process-wide on purpose: OpenTelemetry's own tracer provider, context manager and propagator
 * are globals, and the API's client, the intake, the worker and `httpUpstream` must all see the
 * same one.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { Logger } from './logger.js';
import type { TracingRuntime } from './tracing-sdk.js';

export type { TracingRuntime } from './tracing-sdk.js';

let active: TracingRuntime | undefined;

/** The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`), or undefined: tracing stays off. */
export function tracingEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return raw ? raw : undefined;
}

export interface StartTracingOptions {
  /** `service.name` of this process's spans, unless `OTEL_SERVICE_NAME` says otherwise. */
  serviceName: string;
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** `service.version`. Default none. */
  serviceVersion?: string;
  log?: Logger;
}

/**
 * Turns tracing on for this process when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (idempotent);
 * returns whether it is on. Call it before the Temporal client and the worker are made.
 */
export async function startTracing(o: StartTracingOptions): Promise<boolean> {
  if (active) return true;
  const env = o.env ?? process.env;
  const endpoint = tracingEndpoint(env);
  if (!endpoint) return false;
  const { createTracingRuntime } = await import('./tracing-sdk.js');
  active = createTracingRuntime({ endpoint, serviceName: env.OTEL_SERVICE_NAME || o.serviceName, serviceVersion: o.serviceVersion });
  o.log?.info(
    { endpoint: endpoint.replace(/\/\/[^@/]*@/, '//'), serviceName: env.OTEL_SERVICE_NAME || o.serviceName },
    'traces exported over OTLP/HTTP',
  );
  return true;
}

/** Flushes the spans still batched and turns tracing off again (a process's shutdown, a test's end). */
export async function stopTracing(): Promise<void> {
  const t = active;
  active = undefined;
  await t?.shutdown();
}

/** The running tracing, or undefined when it is off. */
export function tracingRuntime(): TracingRuntime | undefined {
  return active;
}

/** `fn` inside a new span (a child of the active one), or just `fn` when tracing is off. */
export function withSpan<T>(name: string, attributes: Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T> {
  return active ? active.withSpan(name, attributes, fn) : fn();
}

/** Adds attributes to the active span (when tracing is on and a span is active). */
export function annotateSpan(attributes: Record<string, string | number | boolean>): void {
  active?.annotate(attributes);
}

/** The active trace's ID (32 hex), or undefined when tracing is off or no span is active. */
export function currentTraceId(): string | undefined {
  return active?.traceId();
}

/** `traceparent` (and `tracestate`) of the active span, for an outgoing request; `{}` when off. */
export function traceHeaders(): Record<string, string> {
  return active ? active.headers() : {};
}

/** The Temporal client's interceptors: OpenTelemetry's start/signal spans and headers when on, none when off. */
export function tracingClientInterceptors(): WorkflowClientInterceptor[] {
  return active ? [active.clientInterceptor] : [];
}

/** The trace UI's link for a trace (`TRACE_UI_URL` with `{traceId}`, e.g. Jaeger's `http://127.0.0.1:16686/trace/{traceId}`). */
export function traceUrl(template: string | undefined, traceId: string): string | undefined {
  if (!template) return undefined;
  return template.includes('{traceId}') ? template.replaceAll('{traceId}', traceId) : `${template.replace(/\/$/, '')}/${traceId}`;
}
