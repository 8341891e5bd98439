-- Job lists and delayed jobs (issue 38 §1, §2). Numbered 0023: other branches may add 0020-0022.
--
-- run_at: a delayed job's start time (`runAt` / `delaySeconds` on submit); NULL for a job that
-- runs at once. The row's status stays `queued`; the API shows `scheduled` while run_at is in
-- the future (services/job-status.ts), so no writer has to move it and every existing state
-- keeps its meaning.
ALTER TABLE job_intents ADD COLUMN run_at timestamptz;
-- tags: the submitter's business tags, a flat map of short strings (services/submit-options.ts
-- validates them); NULL when none. Lists filter on one `key:value` with `@>`, which this GIN
-- index answers (jsonb_path_ops: containment only, smaller than the default operator class).
ALTER TABLE job_intents ADD COLUMN tags jsonb;
CREATE INDEX job_intents_tags ON job_intents USING gin (tags jsonb_path_ops) WHERE tags IS NOT NULL;
-- The pages of a list, newest first, by keyset (created_at, job_id) (store/job-pages.ts): a
-- tenant's list reads its own slice of this index backwards from the cursor, and the operators'
-- list across tenants the second one. job_id breaks ties between jobs created in the same
-- microsecond, so a page boundary never skips or repeats a job.
CREATE INDEX job_intents_tenant_page ON job_intents (tenant_id, created_at, job_id);
CREATE INDEX job_intents_page ON job_intents (created_at, job_id);
