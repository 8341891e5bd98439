-- Inbound webhooks: one row per (source, webhook-id), the dedup ledger and the record of
-- what to do with the event, written in one statement (so in one transaction).

CREATE TABLE webhook_deliveries (
  source              text NOT NULL,
  webhook_id          text NOT NULL,
  event_type          text NOT NULL,
  -- The provider object the event is about (a transcription ID): how the event finds its job.
  subject             text,
  -- The event's data, kept until it reached its job (the job may not be known yet).
  payload             jsonb NOT NULL,
  job_id              text,
  -- pending_signal: recorded, its job known, the signal not confirmed yet (Temporal down):
  --                 a redelivery (or the compensation scan) signals it again.
  -- signalled:      the job's workflow accepted the signal.
  -- unmatched:      no job knows this subject yet (the webhook beat the job's record of its
  --                 provider ID); the job claims it when it stores that ID.
  -- claimed:        delivered to its job through that claim.
  -- job_closed:     the job had already finished (for example by polling): nothing to do.
  -- ignored:        an event type no job waits for.
  outcome             text NOT NULL
                      CHECK (outcome IN ('pending_signal', 'signalled', 'unmatched', 'claimed', 'job_closed', 'ignored')),
  times_received      integer NOT NULL DEFAULT 1,
  first_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_received_at    timestamptz NOT NULL DEFAULT now(),
  -- Lease of whoever is signalling: concurrent duplicates must not signal the job again.
  signal_attempted_at timestamptz,
  processed_at        timestamptz,
  -- Dedup: a provider's retries keep the webhook-id; the second insert becomes a counter bump.
  PRIMARY KEY (source, webhook_id)
);
CREATE INDEX webhook_deliveries_subject ON webhook_deliveries (event_type, subject) WHERE outcome = 'unmatched';
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (signal_attempted_at) WHERE outcome = 'pending_signal';

-- Webhooks name the provider's object, not our job: find the job by the stored provider ID.
CREATE INDEX effects_provider_id ON effects (provider_id, step) WHERE provider_id IS NOT NULL;
