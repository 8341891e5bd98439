-- A replay request re-sent after its first request's workflow was closed (terminated, reset)
-- takes over the dead letters that request left `replaying`: the action names it.
ALTER TABLE dead_letter_actions DROP CONSTRAINT dead_letter_actions_action_check;
ALTER TABLE dead_letter_actions ADD CONSTRAINT dead_letter_actions_action_check
  CHECK (action IN ('recorded', 'replay_requested', 'replay_started', 'replay_taken_over', 'replay_succeeded',
                    'replay_failed', 'replay_skipped', 'discarded'));

-- The ramped resume's stop condition: when, over the last `windowSeconds`, at least
-- `minAttempts` upstream attempts of jobs the ramp admitted were made and the share that
-- failed retryably (5xx, 429, timeouts, lost leases) reaches `failureRatio`, the gate pauses
-- the ramping priority again. `ramp_halted` says when and why (null: not halted, or resumed since).
ALTER TABLE degradation_setting
  ADD COLUMN ramp_stop jsonb NOT NULL DEFAULT '{"failureRatio": 0.5, "windowSeconds": 60, "minAttempts": 10}';
ALTER TABLE degradation_setting ADD COLUMN ramp_halted jsonb;
