-- Same webhook-id, different body (issue 39 §5, F12). A provider's redelivery carries the
-- bytes it signed the first time; a delivery under a known webhook-id whose body differs is
-- not a redelivery (a provider bug, or someone replaying a leaked secret with new content).
-- Dedup alone answered it `duplicate` and forgot it. The SHA-256 of the raw body lets the
-- receiver refuse it (409) and count it here, on the row it collided with.
--
-- Numbered 0022, not 0021: another branch adds a 0021; the migrator applies files it has not
-- recorded in name order, so either order of landing applies both.
ALTER TABLE webhook_deliveries
  -- NULL on rows recorded before this migration: the first redelivery after it adopts its hash.
  ADD COLUMN body_sha256 bytea,
  ADD COLUMN conflicting_deliveries integer NOT NULL DEFAULT 0,
  ADD COLUMN last_conflict_at timestamptz;
