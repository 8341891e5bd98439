-- The backlog anchor of every health report and scrape (`unfinishedNow`, store/health.ts)
-- counts the jobs not finished yet. Without an index it read every row of job_intents, so a
-- scrape grew with the table (2 s at 100k finished jobs in the bench); this partial index holds
-- only the unfinished ones, so the count stays as small as the backlog.
CREATE INDEX job_intents_unfinished ON job_intents (job_type) WHERE finished_at IS NULL;
