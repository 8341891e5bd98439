import { describe, expect, it } from 'vitest';
import { currentTraceId, traceHeaders, tracingEndpoint, traceUrl, withSpan } from '../../lib/tracing.js';
import { jaegerConfig } from '../../scripts/lib/jaeger.js';

describe('tracing switch (lib/tracing.ts), off', () => {
  it('is on only with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    expect(tracingEndpoint({})).toBeUndefined();
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeUndefined();
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe('http://127.0.0.1:4318');
  });

  it('off, a span is just the call: no trace ID, no headers', async () => {
    expect(await withSpan('x', {}, async () => currentTraceId())).toBeUndefined();
    expect(traceHeaders()).toEqual({});
  });
});

describe('traceUrl (TRACE_UI_URL)', () => {
  const id = '0af7651916cd43dd8448eb211c80319c';
  it('fills {traceId}, or appends the ID to a base URL, or gives none without a template', () => {
    expect(traceUrl('http://127.0.0.1:16686/trace/{traceId}', id)).toBe(`http://127.0.0.1:16686/trace/${id}`);
    expect(traceUrl('https://ui.example/trace/', id)).toBe(`https://ui.example/trace/${id}`);
    expect(traceUrl(undefined, id)).toBeUndefined();
  });
});

describe('jaegerConfig', () => {
  it('binds every listener to the given loopback ports and keeps traces in memory', () => {
    const c = jaegerConfig({ otlpHttp: 40001, queryHttp: 40002, queryGrpc: 40003 });
    expect(c).toContain('endpoint: 127.0.0.1:40001');
    expect(c).toContain('endpoint: 127.0.0.1:40002');
    expect(c).toContain('endpoint: 127.0.0.1:40003');
    expect(c).toContain('memory:');
    expect(c).toMatch(/metrics:\n\s+level: none/);
  });
});
