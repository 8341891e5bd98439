-- Bulk actions and reruns (issue 38 §3).
--
-- bulk_actions: one row per request (`POST /v1/admin/bulk-actions`), written with the start of
-- its workflow (`bulk-<uuid>`, the row's id). The workflow keeps the live progress (its query);
-- this row keeps the last counts the workflow reported (after every batch) and how it ended, so
-- the list and a finished action are read from Postgres alone.
CREATE TABLE bulk_actions (
  id            text PRIMARY KEY,
  action        text NOT NULL CHECK (action IN ('cancel', 'rerun', 'discard', 'retry-now')),
  requested_by  text NOT NULL,
  -- What selected the targets, as the operator sent it (filter or IDs), and the options.
  selector      jsonb NOT NULL,
  options       jsonb NOT NULL,
  total         integer NOT NULL,
  state         text NOT NULL DEFAULT 'running'
                CHECK (state IN ('running', 'paused', 'stopping', 'completed', 'stopped')),
  done          integer NOT NULL DEFAULT 0,
  applied       integer NOT NULL DEFAULT 0,
  skipped       integer NOT NULL DEFAULT 0,
  failed        integer NOT NULL DEFAULT 0,
  stop_reason   text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);
CREATE INDEX bulk_actions_created ON bulk_actions (created_at DESC, id DESC);

-- One audit row per item under the operator's name. The primary key makes an item's action
-- happen once per request: a retried activity finds its row and does not act twice.
-- granted_at: when the workflow's token bucket let the item go (workflow time, deterministic);
-- the rate holds over these (at most burst + rate x elapsed in any window). at: when the action
-- was recorded here, after it was applied.
CREATE TABLE bulk_action_items (
  bulk_id     text NOT NULL REFERENCES bulk_actions (id),
  target_id   text NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('applied', 'skipped', 'failed')),
  actor       text NOT NULL,
  detail      jsonb NOT NULL DEFAULT '{}',
  granted_at  timestamptz NOT NULL,
  at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (bulk_id, target_id)
);

-- pause / resume / stop of a bulk action, each with its operator (as replay_actions does).
CREATE TABLE bulk_action_commands (
  id        bigserial PRIMARY KEY,
  bulk_id   text NOT NULL REFERENCES bulk_actions (id),
  command   text NOT NULL CHECK (command IN ('paused', 'resumed', 'stopped')),
  actor     text NOT NULL,
  details   jsonb NOT NULL DEFAULT '{}',
  at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bulk_action_commands_bulk ON bulk_action_commands (bulk_id, at);

-- A rerun is a new job linked to the finished job it reruns (`<jobId>-rerun-<n>`); replays keep
-- their own link (replay_of). rerun_from_step: the first effect step that executes again (NULL:
-- all of them); the steps before it were copied from the original's succeeded effects.
ALTER TABLE job_intents ADD COLUMN rerun_of text;
ALTER TABLE job_intents ADD COLUMN rerun_from_step text;
CREATE INDEX job_intents_rerun_of ON job_intents (rerun_of) WHERE rerun_of IS NOT NULL;
