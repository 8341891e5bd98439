/**
 * A worker's share of the traces (lib/tracing.ts): when tracing is on in this process, the
 * workflow bundle carries OpenTelemetry's workflow interceptors (a `RunWorkflow` span, and a
 * `StartActivity` span whose context travels to the activity in its headers), the workflow's
 * spans leave the sandbox through a sink into this process's exporter, and each activity runs
 * inside a `RunActivity` span (so `httpUpstream` and a `ctx.effect`'s own client see it as the
 * active context). When tracing is off all three are absent: not even the package is loaded.
 *
 * History safety ("pick once"): the workflow interceptors add headers to the commands that
 * schedule activities and an SDK flag to the first workflow task, never a command, marker or
 * timer of their own; headers and flags are not compared on replay. So a history recorded with
 * tracing off replays with it on and the other way round
 * (test/integration/replay.tracing.test.ts replays every recorded history with it on).
 */
import { createRequire } from 'node:module';
import type { WorkerOptions } from '@temporalio/worker';
import { tracingRuntime } from '../lib/tracing.js';

/**
 * `bundleWorkflowCode` options: the workflow interceptors when tracing is on, nothing when off.
 * The module is resolved only then: the interceptors package is an optional peer, absent from an
 * install that never traces.
 */
export function tracingBundleOptions(): { workflowInterceptorModules?: string[] } {
  if (!tracingRuntime()) return {};
  const module = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');
  return { workflowInterceptorModules: [module] };
}

/** `Worker.create` options: the activity interceptors and the workflow span sink when on, nothing when off. */
export async function tracingWorkerOptions(): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const t = tracingRuntime();
  if (!t) return {};
  const otel = await import('@temporalio/interceptors-opentelemetry');
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx, { tracer: t.tracer }),
          outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: otel.makeWorkflowExporter(t.processor, t.resource) },
  };
}
