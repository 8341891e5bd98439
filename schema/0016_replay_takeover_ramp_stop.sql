-- A replay request re-sent after its first request's workflow was closed (terminated, reset)
-- takes over the dead letters that request left `replaying`: the action names it.
ALTER TABLE dead_letter_actions DROP CONSTRAINT dead_letter_actions_action_check;
ALTER TABLE dead_letter_actions ADD CONSTRAINT dead_letter_actions_action_check
  CHECK (action IN ('recorded', 'replay_requested', 'replay_started', 'replay_taken_over', 'replay_succeeded',
                    'replay_failed', 'replay_skipped', 'discarded'));
