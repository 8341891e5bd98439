-- Webhook triggers in job definitions (issue 37 §3) and sources bound to tenants (F3).
--
-- A type's `webhook.route(event)` decides what an event does: start a job of the type, or
-- signal a running one with a signal and argument of its choosing. The receiver records that
-- decision with the delivery, so a redelivery, the compensation scan's re-signal and a job's
-- claim of an early event send exactly what the route chose, without calling it again.
--
-- A source bound to a tenant (`WEBHOOK_SECRETS` `source@tenant=whsec_...`) starts and touches
-- only that tenant's jobs. The binding in force when the delivery came in is kept on its row:
-- a job claiming an early event refuses one from a source bound to another tenant.
ALTER TABLE webhook_deliveries
  ADD COLUMN source_tenant_id text,
  ADD COLUMN job_type text,
  ADD COLUMN signal_name text,
  ADD COLUMN signal_arg jsonb,
  -- Why a `refused` delivery was refused: the tenant binding, or the intake's answer to a start.
  ADD COLUMN refusal text;

-- pending_start: recorded, its route starts a job; the start is not confirmed yet (a
--                redelivery starts it again: the job's idempotency key makes that one job).
-- started:       the job was accepted (job_id).
-- refused:       a source bound to a tenant addressed another tenant's job, or the intake
--                refused the start (unknown tenant, the key used with another input).
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_outcome_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_outcome_check
  CHECK (outcome IN ('pending_signal', 'signalled', 'unmatched', 'claimed', 'job_closed', 'ignored', 'pending_start', 'started', 'refused'));

-- Deliveries recorded before routes were all `transcription.completed` events for the
-- `transcribe` type, signalled with `transcriptionCompleted` and the event's fields. The ones
-- still waiting for their job get exactly that, so the generic re-signal and claim send what
-- the old code would have sent.
UPDATE webhook_deliveries
   SET job_type = 'transcribe',
       signal_name = 'transcriptionCompleted',
       signal_arg = jsonb_build_object(
         'webhookId', webhook_id,
         'transcriptionId', payload ->> 'id',
         'status', coalesce(payload ->> 'status', 'completed'),
         'text', CASE WHEN jsonb_typeof(payload -> 'text') = 'string' THEN payload ->> 'text' ELSE '' END)
 WHERE event_type = 'transcription.completed' AND signal_name IS NULL;
