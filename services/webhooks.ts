/**
 * Inbound events, the use case behind `POST /v1/webhooks/{source}` once the signature is
 * verified: parse, route (the subscribed type's `webhook.route`, services/webhook-routes.ts),
 * dedupe, decide and hand the event on: start a job, or signal a running one. The dedup row and
 * the decision commit together; the start or signal follows. A failed signal leaves the row
 * `pending_signal` for the compensation scan (or a redelivery), so the provider hears 2xx; a
 * failed start leaves it `pending_start` and the provider hears 503 (its redelivery starts it).
 *
 * A source bound to a tenant (F3) starts only that tenant's jobs and signals only that tenant's
 * jobs: an event addressed to another tenant's job is recorded `refused` and nothing else happens.
 */
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import type { JobRegistry } from '../job-api/registry.js';
import { withTransaction } from '../lib/db.js';
import { IdempotencyConflictError, NotFoundError, PermissionError, ValidationError } from '../lib/errors.js';
import { jobIdFor } from '../lib/ids.js';
import { findUnstorableText, jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../lib/json-safety.js';
import type { Logger } from '../lib/logger.js';
import {
  claimPendingSignal,
  getDelivery,
  jobForProviderObject,
  lockSubject,
  recordDelivery,
  setSignalOutcome,
  setStartOutcome,
  tenantOfJob,
  type DeliveryOutcome,
  type DeliveryRow,
  type NewDelivery,
} from '../store/webhook-deliveries.js';
import type { JobsClient } from './intake.js';
import { routeEvent, webhookRoutes, type RoutedEvent } from './webhook-routes.js';

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

export interface WebhookServiceDeps {
  pool: pg.Pool;
  temporal: Client;
  /** The registry: the types' `webhook` subscriptions are the only routes. */
  jobTypes: Pick<JobRegistry, 'modules'>;
  /** Starts the jobs routes ask for (the intake, with the type's own checks). */
  jobs: Pick<JobsClient, 'submitTriggeredJob'>;
}

/** Where a delivery came in: its source and the tenant it is bound to (null: a source of no one tenant). */
export interface DeliverySource {
  source: string;
  tenantId: string | null;
}

type Decision = Omit<NewDelivery, 'source' | 'webhookId' | 'eventType' | 'payload' | 'bodySha256'>;

const refuse = (jobType: string, refusal: string, jobId: string | null = null): Decision => ({
  subject: null,
  jobId,
  outcome: 'refused',
  jobType,
  refusal,
});

/** A refusal the sender may read: never another tenant's ID or job. */
export const NOT_THIS_TENANT = "the source is bound to a tenant and the event addresses another tenant's job";

export function createWebhookService(deps: WebhookServiceDeps) {
  const routes = webhookRoutes(deps.jobTypes);

  /** The subscribed type's decision about a verified event (pure; `invalid` is answered 400 with nothing recorded). */
  function route(from: DeliverySource, webhookId: string, event: WebhookEvent): RoutedEvent {
    return routeEvent(routes, { webhookId, source: from.source, tenantId: from.tenantId, type: event.type, data: event.data });
  }

  /** The tenant an event acts for: the source's; a route may name one only for a source of no tenant. */
  function actingTenant(from: DeliverySource, routed: { tenantId?: string }): { tenantId: string } | { refusal: string } {
    if (from.tenantId !== null && routed.tenantId !== undefined && routed.tenantId !== from.tenantId)
      return { refusal: 'the source is bound to a tenant and the route named another one' };
    const tenantId = from.tenantId ?? routed.tenantId;
    return tenantId ? { tenantId } : { refusal: 'the source is bound to no tenant and the route named none' };
  }

  /** What to record for a signal: its job (found by provider object or key), unless the job is another tenant's. */
  async function decideSignal(tx: pg.PoolClient, from: DeliverySource, event: WebhookEvent, r: Extract<RoutedEvent, { kind: 'signal' }>) {
    const signal = { jobType: r.jobType, signalName: r.name, signalArg: r.arg };
    if ('providerId' in r.target) {
      // Under the subject lock: a job storing its provider ID right now cannot miss this event (see `lockSubject`).
      await lockSubject(tx, event.type, r.target.providerId);
      const found = await jobForProviderObject(tx, r.jobType, r.target.step, r.target.providerId);
      const subject = r.target.providerId;
      if (!found) return { ...signal, subject, jobId: null, outcome: 'unmatched' as const };
      const allowed = from.tenantId ?? r.tenantId;
      if (allowed !== undefined && allowed !== found.tenantId) return { ...refuse(r.jobType, NOT_THIS_TENANT, found.jobId), subject };
      return { ...signal, subject, jobId: found.jobId, outcome: 'pending_signal' as const };
    }
    const acting = actingTenant(from, r);
    if ('refusal' in acting) return refuse(r.jobType, acting.refusal);
    const jobId = jobIdFor(acting.tenantId, r.jobType, r.target.idempotencyKey);
    const tenant = await tenantOfJob(tx, jobId);
    return {
      ...signal,
      subject: null,
      jobId: tenant ? jobId : null,
      outcome: tenant ? ('pending_signal' as const) : ('unmatched' as const),
    };
  }

  /**
   * The dedup row and the decision about the event (start a job, signal its job, wait for the
   * job to claim it, refuse or ignore it), in one transaction.
   */
  function record(from: DeliverySource, webhookId: string, raw: Buffer, event: WebhookEvent, routed: RoutedEvent) {
    return withTransaction(deps.pool, async (tx) => {
      let decision: Decision;
      if (routed.kind === 'signal') decision = await decideSignal(tx, from, event, routed);
      else if (routed.kind === 'start') {
        const acting = actingTenant(from, routed);
        decision =
          'refusal' in acting
            ? refuse(routed.jobType, acting.refusal)
            : {
                subject: null,
                jobId: jobIdFor(acting.tenantId, routed.jobType, routed.idempotencyKey),
                outcome: 'pending_start',
                jobType: routed.jobType,
              };
      } else decision = { subject: null, jobId: null, outcome: 'ignored' };
      return recordDelivery(tx, {
        ...decision,
        source: from.source,
        webhookId,
        eventType: event.type,
        payload: event.data,
        sourceTenantId: from.tenantId,
        bodySha256: createHash('sha256').update(raw).digest(),
      });
    });
  }

  /** Signals the job once; a failure leaves the delivery `pending_signal` for a redelivery or the scan. */
  async function signalJob(row: DeliveryRow, log: Pick<Logger, 'warn'>): Promise<DeliveryOutcome> {
    try {
      await deps.temporal.connection.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        deps.temporal.workflow.getHandle(row.job_id!).signal(row.signal_name!, row.signal_arg),
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
   * Starts the routed job through the intake (idempotent by its key: a redelivery finds the same
   * job). What the intake refuses for good (unknown tenant, the key used with another input) is
   * recorded `refused`; Temporal or Postgres unavailable is thrown (503: the provider redelivers).
   */
  async function startJob(row: DeliveryRow, from: DeliverySource, routed: Extract<RoutedEvent, { kind: 'start' }>) {
    try {
      await deps.jobs.submitTriggeredJob({
        tenantId: (from.tenantId ?? routed.tenantId)!,
        type: routed.jobType,
        idempotencyKey: routed.idempotencyKey,
        input: routed.input,
      });
    } catch (err) {
      const final = [ValidationError, NotFoundError, IdempotencyConflictError, PermissionError].some((c) => err instanceof c);
      if (!final) throw err;
      const refusal = `the job could not be started: ${(err as Error).message}`;
      await setStartOutcome(deps.pool, row.source, row.webhook_id, 'refused', refusal);
      return { outcome: 'refused' as const, refusal };
    }
    await setStartOutcome(deps.pool, row.source, row.webhook_id, 'started');
    return { outcome: 'started' as const, refusal: null };
  }

  /**
   * Records a verified, routed delivery once and hands it on: a new one (or a `pending_signal`
   * one whose lease expired) signals its job now; a new or still `pending_start` one starts its
   * job. `signalFailed`: recorded, not yet delivered. `conflict`: the webhook-id is known with a
   * different body; counted on its row, nothing else done. `refusal`: why it was refused.
   */
  async function accept(
    from: DeliverySource,
    webhookId: string,
    raw: Buffer,
    event: WebhookEvent,
    routed: RoutedEvent,
    log: Pick<Logger, 'warn'>,
  ) {
    const row = await record(from, webhookId, raw, event, routed);
    const duplicate = !row.inserted;
    if (row.conflict) return { row, outcome: row.outcome, signalFailed: false, duplicate: true, conflict: true, refusal: null };
    let outcome = row.outcome;
    let refusal = row.refusal;
    let signalFailed = false;
    if (outcome === 'pending_signal' && (row.inserted || (await claimPendingSignal(deps.pool, from.source, webhookId, SIGNAL_LEASE_MS)))) {
      outcome = await signalJob(row, log);
      signalFailed = outcome === 'pending_signal';
    } else if (outcome === 'pending_start' && routed.kind === 'start') {
      ({ outcome, refusal } = await startJob(row, from, routed));
    }
    return { row, outcome, signalFailed, duplicate, conflict: false, refusal };
  }

  return { route, accept, delivery: (source: string, webhookId: string) => getDelivery(deps.pool, source, webhookId) };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
