/**
 * Inbound provider events, the use case behind `POST /v1/webhooks/{source}` once the
 * signature is verified: parse, dedupe, decide and hand the event to its job. The dedup row
 * and the decision commit together; the signal follows, and a failed signal leaves the row
 * `pending_signal` for the compensation scan (or a redelivery). The delivery is durable
 * either way, so the provider hears 2xx.
 */
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import { toEvent, transcriptionCompletedSignal, TRANSCRIPTION_COMPLETED, TRANSCRIPTION_STEP } from '../contract/messages.js';
import { withTransaction } from '../lib/db.js';
import { findUnstorableText, jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../lib/json-safety.js';
import type { Logger } from '../lib/logger.js';
import {
  claimPendingSignal,
  getDelivery,
  jobForProviderObject,
  lockSubject,
  recordDelivery,
  setSignalOutcome,
  type DeliveryOutcome,
  type DeliveryRow,
} from '../store/webhook-deliveries.js';

/**
 * A delivery still `pending_signal` is re-signalled by a redelivery only after this lease:
 * concurrent duplicates leave it to the request that is signalling right now, while a
 * provider's retry after an outage finds it free.
 */
export const SIGNAL_LEASE_MS = 5_000;
/** The signal is one RPC; past this deadline the delivery stays `pending_signal` (answered 202) for the scan. */
const SIGNAL_DEADLINE_MS = 3_000;

export interface WebhookEvent {
  type: string;
  data: Record<string, unknown>;
}

/** Parsed only after verification: bad JSON under a valid signature is the sender's bug (400), not an attack (401). */
export function parseEvent(raw: Buffer): { ok: true; event: WebhookEvent } | { ok: false; detail: string } {
  const text = raw.toString('utf8');
  // Before the parse: past this depth the recursive checks below and the jsonb serialisation
  // would overflow the stack (a 500, redelivered forever).
  if (jsonNestedDeeperThan(text)) return { ok: false, detail: `the body nests deeper than ${MAX_JSON_DEPTH} levels` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, detail: 'the body is not valid JSON' };
  }
  const o = json as { type?: unknown; data?: unknown };
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { ok: false, detail: 'the body must be a JSON object' };
  if (typeof o.type !== 'string' || o.type.length === 0 || o.type.length > 200)
    return { ok: false, detail: 'type must be a string of 1-200 characters' };
  if (o.data !== undefined && (typeof o.data !== 'object' || o.data === null || Array.isArray(o.data)))
    return { ok: false, detail: 'data must be an object' };
  // Postgres cannot store these in jsonb: refuse with 400 (the sender's bug) rather than 500,
  // which would make the provider redeliver the same unstorable event forever.
  const unstorable = findUnstorableText(json, 'body');
  if (unstorable) return { ok: false, detail: `${unstorable.path} ${unstorable.message}` };
  return { ok: true, event: { type: o.type, data: (o.data ?? {}) as Record<string, unknown> } };
}

/** Which provider object an event is about, for the event types a job waits for; undefined: ignored. */
export function subjectOf(event: WebhookEvent): { subject: string; step: string } | { error: string } | undefined {
  if (event.type !== TRANSCRIPTION_COMPLETED) return undefined;
  const id = event.data.id;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200)
    return { error: 'data.id must be the transcription ID (1-200 characters)' };
  return { subject: id, step: TRANSCRIPTION_STEP };
}

export interface WebhookServiceDeps {
  pool: pg.Pool;
  temporal: Client;
}

export function createWebhookService(deps: WebhookServiceDeps) {
  /** Signals the job once; a failure leaves the delivery `pending_signal` for a redelivery or the scan. */
  async function signalJob(row: DeliveryRow, log: Pick<Logger, 'warn'>): Promise<DeliveryOutcome> {
    const event = toEvent(row.webhook_id, row.payload);
    try {
      await deps.temporal.connection.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        deps.temporal.workflow.getHandle(row.job_id!).signal(transcriptionCompletedSignal, event),
      );
      await setSignalOutcome(deps.pool, row.source, row.webhook_id, 'signalled');
      return 'signalled';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // The job already finished (for example by polling): the event has nothing left to do.
        await setSignalOutcome(deps.pool, row.source, row.webhook_id, 'job_closed');
        return 'job_closed';
      }
      log.warn(
        { webhookId: row.webhook_id, jobId: row.job_id, err: { name: (err as Error).name, message: (err as Error).message } },
        'webhook recorded but the job could not be signalled; it stays pending_signal',
      );
      return 'pending_signal';
    }
  }

  /**
   * The dedup row and the decision about the event (signal its job, wait for the job to
   * claim it, or ignore it), in one transaction; under the subject lock so that a job
   * storing its provider ID right now cannot miss this event (see `lockSubject`).
   */
  function record(
    source: string,
    webhookId: string,
    raw: Buffer,
    event: WebhookEvent,
    target: { subject: string; step: string } | undefined,
  ) {
    return withTransaction(deps.pool, async (tx) => {
      let jobId: string | undefined;
      if (target) {
        await lockSubject(tx, event.type, target.subject);
        jobId = await jobForProviderObject(tx, target.step, target.subject);
      }
      const outcome: DeliveryOutcome = !target ? 'ignored' : jobId ? 'pending_signal' : 'unmatched';
      return recordDelivery(tx, {
        source,
        webhookId,
        eventType: event.type,
        subject: target?.subject ?? null,
        payload: event.data,
        jobId: jobId ?? null,
        outcome,
        bodySha256: createHash('sha256').update(raw).digest(),
      });
    });
  }

  /**
   * Records a verified delivery once and hands it on: a new one (or a `pending_signal` one
   * whose lease expired) signals its job now. `signalFailed`: recorded, not yet delivered.
   * `conflict`: the webhook-id is known with a different body; counted on its row, nothing
   * else done (never signalled: the job already has, or will get, the first body).
   */
  async function accept(
    source: string,
    webhookId: string,
    raw: Buffer,
    event: WebhookEvent,
    target: { subject: string; step: string } | undefined,
    log: Pick<Logger, 'warn'>,
  ) {
    const row = await record(source, webhookId, raw, event, target);
    if (row.conflict) return { row, outcome: row.outcome, signalFailed: false, duplicate: true, conflict: true };
    let outcome = row.outcome;
    let signalFailed = false;
    if (row.outcome === 'pending_signal' && (row.inserted || (await claimPendingSignal(deps.pool, source, webhookId, SIGNAL_LEASE_MS)))) {
      outcome = await signalJob(row, log);
      signalFailed = outcome === 'pending_signal';
    }
    return { row, outcome, signalFailed, duplicate: !row.inserted, conflict: false };
  }

  return { accept, delivery: (source: string, webhookId: string) => getDelivery(deps.pool, source, webhookId) };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
