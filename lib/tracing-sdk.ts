/**
 * The OpenTelemetry Node SDK behind lib/tracing.ts, loaded only when tracing is on: a
 * NodeTracerProvider registered globally (AsyncLocalStorage context, W3C trace context), one
 * batch processor exporting over OTLP/HTTP, and the Temporal client interceptor. The worker's
 * pieces (workers/tracing.ts) reuse this processor and resource for the workflow spans that
 * arrive through the sink.
 */
import { context, propagation, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { WorkflowClientInterceptor } from '@temporalio/client';

export interface TracingRuntime {
  tracer: Tracer;
  resource: Resource;
  /** The batch processor every span of this process ends in (the workflow sink's too). */
  processor: SpanProcessor;
  clientInterceptor: WorkflowClientInterceptor;
  withSpan<T>(name: string, attributes: Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T>;
  annotate(attributes: Record<string, string | number | boolean>): void;
  traceId(): string | undefined;
  headers(): Record<string, string>;
  shutdown(): Promise<void>;
}

/** `endpoint`: the OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans go to `<endpoint>/v1/traces`. */
export function createTracingRuntime(o: { endpoint: string; serviceName: string; serviceVersion?: string }): TracingRuntime {
  const resource = new Resource({
    [ATTR_SERVICE_NAME]: o.serviceName,
    ...(o.serviceVersion ? { [ATTR_SERVICE_VERSION]: o.serviceVersion } : {}),
  });
  const exporter = new OTLPTraceExporter({ url: `${o.endpoint.replace(/\/$/, '')}/v1/traces` });
  const processor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  const tracer = provider.getTracer('durable-jobs');
  return {
    tracer,
    resource,
    processor,
    clientInterceptor: new OpenTelemetryWorkflowClientInterceptor({ tracer }),
    withSpan: (name, attributes, fn) =>
      tracer.startActiveSpan(name, { attributes }, async (span) => {
        try {
          return await fn();
        } catch (err) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name });
          throw err;
        } finally {
          span.end();
        }
      }),
    annotate: (attributes) => trace.getActiveSpan()?.setAttributes(attributes),
    traceId: () => trace.getActiveSpan()?.spanContext().traceId,
    headers: () => {
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return carrier;
    },
    async shutdown() {
      // An unreachable collector must not fail the process's shutdown: the spans are lost, the work is not.
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
