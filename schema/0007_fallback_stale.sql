-- Degradation that keeps the truth, part two: a labelled stale result, and a fallback
-- upstream that is only ever used by an explicit, recorded decision.

-- The last successful result of the same intent content (tenant, type, input hash), read
-- when a caller asks for a stale result while its own job has not succeeded. Partial: only
-- succeeded rows are candidates; newest first.
CREATE INDEX job_intents_last_success ON job_intents (tenant_id, job_type, input_hash, finished_at DESC)
  WHERE status = 'succeeded';

-- The operator's decision: job types whose steps call the fallback upstream instead of the
-- primary. `fallback_since` keeps, per enabled type, when and by whom it was first enabled
-- ({"summarize": {"at": "...Z", "by": "alice"}}); re-sending the same setting keeps it.
ALTER TABLE degradation_setting ADD COLUMN fallback_job_types text[] NOT NULL DEFAULT '{}';
ALTER TABLE degradation_setting ADD COLUMN fallback_since jsonb NOT NULL DEFAULT '{}';

-- Per effect: which upstream it was (or may have been) sent to. Written before the call, so
-- an effect in doubt is reconciled with the upstream that may have applied it, never re-sent
-- to the other one.
ALTER TABLE effects ADD COLUMN upstream text NOT NULL DEFAULT 'primary' CHECK (upstream IN ('primary', 'fallback'));
CREATE INDEX effects_fallback ON effects (last_attempt_at) WHERE upstream = 'fallback';

-- Per job, for its status: the upstream its effects went to ('fallback' once any did; NULL
-- for job types without a fallback) and why (who enabled it, or why it did not switch).
ALTER TABLE job_intents ADD COLUMN upstream text CHECK (upstream IN ('primary', 'fallback'));
ALTER TABLE job_intents ADD COLUMN upstream_reason text;
