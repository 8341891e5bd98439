-- An attempt whose worker died (SIGKILL, OOM, a lost host) records nothing itself. The next
-- attempt of the same activity finds its lease without an end and records it in
-- job_attempts as `lease_expired`, so counting a job's attempts there counts it too.
ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_outcome_check;
ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_outcome_check
  CHECK (outcome IN ('succeeded', 'retryable', 'non_retryable', 'reused', 'reconciled', 'fenced', 'lease_expired'));
