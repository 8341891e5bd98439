-- Effects go through upstream adapters (issue 37 §1): a step names the upstream it calls, and
-- that upstream's client reports its own error codes (Stripe's `card_declined`). The attempt
-- that failed records both beside our error class, and the dead letter copies them from its
-- job's last failed attempt, so an operator sees which upstream refused and in its own words.
-- Nullable: rows from before, and attempts that failed before any upstream was called
-- (our Postgres, a slot wait), have neither.
ALTER TABLE job_attempts ADD COLUMN upstream text, ADD COLUMN provider_code text;
ALTER TABLE dead_letters ADD COLUMN upstream text, ADD COLUMN provider_code text;
