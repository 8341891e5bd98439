-- A tenant's completion webhook (issue 37 §2): where a job type that declares
-- `notify: { completionWebhook }` posts its `job.succeeded` event, signed with Standard
-- Webhooks. One endpoint per tenant; setting it again replaces the URL and the secret. The
-- signing secret must be usable (it signs), so it is kept encrypted (AES-256-GCM with a key
-- derived from the server secret, lib/sealed-secret.ts), never in clear and never returned
-- after the answer that created it.
CREATE TABLE tenant_completion_webhooks (
  tenant_id     text PRIMARY KEY REFERENCES tenants (id),
  url           text NOT NULL,
  secret_sealed bytea NOT NULL,
  -- The secret's first characters, to tell two secrets apart in the admin answer (as key prefixes).
  secret_prefix text NOT NULL,
  created_by    text,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
