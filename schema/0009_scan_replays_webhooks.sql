-- The compensation scan's two newer repairs, counted per run like the others:
--   replays_started:      replay jobs a replay request claimed but never started (its
--                         workflow was terminated or reset between the claim and the start);
--   replays_finished:     dead letters left `replaying` after their replay request closed,
--                         ended from the replay job's own outcome;
--   webhooks_resignalled: webhook deliveries stuck `pending_signal` whose job the scan
--                         signalled again.
ALTER TABLE scan_runs
  ADD COLUMN replays_started      integer NOT NULL DEFAULT 0,
  ADD COLUMN replays_finished     integer NOT NULL DEFAULT 0,
  ADD COLUMN webhooks_resignalled integer NOT NULL DEFAULT 0;

-- The repair looks only at dead letters held by a replay.
CREATE INDEX dead_letters_replaying ON dead_letters (updated_at) WHERE state = 'replaying';
