-- Metric semantics (issue 40 §4): a `durable_jobs_*_total` series is a per-process counter; the
-- figures every API process reads from Postgres (the same value on each) are gauges without
-- `_total`, aggregated with max() across processes (docs/operating.md, "How to aggregate each
-- series"). The stored totals (schema 0013) are keyed by the exported name: rename them so the
-- checkpointed totals carry over and the series never drop.
UPDATE metric_totals SET metric = regexp_replace(metric, '_total$', '_recorded')
 WHERE metric IN ('durable_jobs_jobs_accepted_total', 'durable_jobs_jobs_completed_total', 'durable_jobs_attempts_total',
                  'durable_jobs_reconciliations_total', 'durable_jobs_dead_letters_created_total',
                  'durable_jobs_lease_expirations_total', 'durable_jobs_scan_repairs_total');
