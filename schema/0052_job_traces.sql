-- The trace of a job (issue 40 §3): the ID of the trace its intake span started (W3C trace
-- context, 32 hex digits), written once after its workflow started, only by a process with
-- tracing on (OTEL_EXPORTER_OTLP_ENDPOINT). A table of its own rather than a job_intents column:
-- a deployment without tracing never writes it, and the intake's insert stays as it is. Jobs
-- started by a schedule, the scan or a replay have no intake span and no row here.
CREATE TABLE job_traces (
  job_id text PRIMARY KEY REFERENCES job_intents (job_id) ON DELETE CASCADE,
  trace_id text NOT NULL CHECK (trace_id ~ '^[0-9a-f]{32}$'),
  recorded_at timestamptz NOT NULL DEFAULT now()
);
