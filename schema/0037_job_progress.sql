-- Progress a step reports (`ctx.progress({ done, total, note })`, issue 38 §6): the latest
-- report only, {"done", "total"?, "note"?, "step"}, and when it was stored. A step's reports
-- are carried by its heartbeat and written at most once a second (job-api/progress.ts), so a
-- job that reports in a tight loop costs one small UPDATE a second, not one per report.
ALTER TABLE job_intents
  ADD COLUMN progress jsonb,
  ADD COLUMN progress_at timestamptz;
