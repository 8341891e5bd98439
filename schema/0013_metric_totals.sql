-- Cumulative counters and histograms for /metrics, derived from the durable rows without
-- scanning whole tables on every scrape. `metric_totals` holds each series' count of the
-- rows whose timestamp is at or before `metric_checkpoint.through`; a scrape adds the rows
-- after it, found through the timestamp indexes (created_at, finished_at, ...). A scrape
-- moves the checkpoint forward (at most once a minute, one process at a time) to just before
-- the oldest open transaction, so a row committed later cannot land behind it. Every API
-- process reads the same rows, so every process reports the same totals; they never go down.
CREATE TABLE metric_checkpoint (
  id          smallint PRIMARY KEY CHECK (id = 1),
  through     timestamptz NOT NULL,
  advanced_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO metric_checkpoint (id, through) VALUES (1, '-infinity');

CREATE TABLE metric_totals (
  metric text NOT NULL,     -- the exported series name (..._total, ..._bucket, ..._sum, ..._count)
  labels jsonb NOT NULL,    -- its labels, e.g. {"job_type": "summarize", "outcome": "succeeded"}
  value  double precision NOT NULL,
  PRIMARY KEY (metric, labels)
);
