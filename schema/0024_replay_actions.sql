-- Who steered a replay (issue 39 §4, F9). Pause, resume and stop of a replay request were
-- signals only: stop carried its operator in the signal's payload, pause and resume carried
-- none, and the trail was the API's log line. A replay covers up to 10,000 dead letters, so
-- its steering is a row per command here (not one per dead letter in dead_letter_actions),
-- written in the transaction that sends the signal: a signal Temporal refused leaves no row.
-- Numbered 0024: 0021 is another branch's; 0022 and 0023 are this branch's.
CREATE TABLE replay_actions (
  id         bigserial PRIMARY KEY,
  replay_id  text NOT NULL,
  action     text NOT NULL CHECK (action IN ('paused', 'resumed', 'stopped', 'added')),
  -- The operator the admin key names (server/auth.ts operatorOf): never a self-declared name.
  actor      text NOT NULL,
  details    jsonb NOT NULL DEFAULT '{}',
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replay_actions_replay ON replay_actions (replay_id, id);
