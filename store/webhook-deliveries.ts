import type pg from 'pg';
import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

export type DeliveryOutcome =
  'pending_signal' | 'signalled' | 'unmatched' | 'claimed' | 'job_closed' | 'ignored' | 'pending_start' | 'started' | 'refused';

export interface DeliveryRow {
  source: string;
  webhook_id: string;
  event_type: string;
  subject: string | null;
  payload: Record<string, unknown>;
  job_id: string | null;
  outcome: DeliveryOutcome;
  times_received: number;
  first_seen_at: Date;
  last_received_at: Date;
  signal_attempted_at: Date | null;
  processed_at: Date | null;
  /** SHA-256 of the raw body first recorded; null for rows recorded before 0022. */
  body_sha256: Buffer | null;
  /** Deliveries under this webhook-id whose body differed (refused, never processed). */
  conflicting_deliveries: number;
  last_conflict_at: Date | null;
  /** The tenant the source was bound to when the delivery came in; null: a source of no one tenant (0034). */
  source_tenant_id: string | null;
  /** The job type whose `webhook.route` decided; null for rows from before routes. */
  job_type: string | null;
  /** The signal its route chose, and its argument: what a redelivery or the scan sends. */
  signal_name: string | null;
  signal_arg: unknown;
  /** Why a `refused` delivery was refused (never the event's data). */
  refusal: string | null;
}

/**
 * Serialises "the webhook looks up its job" against "the job stores its provider ID and
 * claims early webhooks" for one subject. Without it both could miss each other: the
 * webhook reads no job (the ID is not committed yet) while the job's claim reads no webhook
 * (the delivery is not committed yet), and the event would wait for no one. Held until the
 * transaction ends.
 */
export async function lockSubject(tx: pg.PoolClient, eventType: string, subject: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`webhook-subject:${eventType}:${subject}`]);
}

/**
 * The job whose effect created the provider object (`effects.provider_id`, stored as soon as
 * the provider answered). `effects.job_id` is the effect SCOPE: the original job's ID, also
 * when a replay job runs the effect. While a replay holds the original's dead letter
 * (`replaying`, one replay job at a time under its row lock), that replay job is the one
 * executing the scope's effects and waiting for their webhooks, so the event goes to it.
 */
export async function jobForProviderObject(
  db: Db,
  jobType: string,
  step: string,
  providerId: string,
): Promise<{ jobId: string; tenantId: string } | undefined> {
  // Only a job of the routing type: another type's step of the same name never receives its events.
  const r = await db.query<{ job_id: string; tenant_id: string }>(
    `SELECT coalesce(dl.replay_job_id, e.job_id) AS job_id, e.tenant_id
       FROM effects e
       JOIN job_intents ji ON ji.job_id = e.job_id AND ji.job_type = $3
       LEFT JOIN dead_letters dl ON dl.job_id = e.job_id AND dl.state = 'replaying'
      WHERE e.provider_id = $1 AND e.step = $2
      ORDER BY e.first_attempt_at LIMIT 1`,
    [providerId, step, jobType],
  );
  const row = r.rows[0];
  return row ? { jobId: row.job_id, tenantId: row.tenant_id } : undefined;
}

/** The tenant of a job this database holds (a job a webhook names by its idempotency key). */
export async function tenantOfJob(db: Db, jobId: string): Promise<string | undefined> {
  const r = await db.query<{ tenant_id: string }>('SELECT tenant_id FROM job_intents WHERE job_id = $1', [jobId]);
  return r.rows[0]?.tenant_id;
}

export interface NewDelivery {
  source: string;
  webhookId: string;
  eventType: string;
  subject: string | null;
  payload: Record<string, unknown>;
  jobId: string | null;
  outcome: DeliveryOutcome;
  /** SHA-256 of the raw body as signed: a redelivery must carry the same bytes. Default none (no check). */
  bodySha256?: Buffer;
  /** The tenant the source is bound to. Default none: a source of no one tenant. */
  sourceTenantId?: string | null;
  /** The routing job type, and the signal its route chose. Default none. */
  jobType?: string | null;
  signalName?: string | null;
  signalArg?: unknown;
  /** Why it is refused (outcome `refused`). */
  refusal?: string | null;
}

/**
 * Inserts the delivery once; a redelivery (same source and webhook-id, also concurrent ones,
 * which wait on the primary key until the first transaction ends) only counts itself and
 * changes nothing else. `inserted` tells which one this call was. A delivery under a known
 * webhook-id with a different body is not a redelivery: it is counted as a conflict on the
 * row (`conflict: true`) and changes nothing else either. A row from before the body hash
 * existed adopts the first hash it sees.
 */
export async function recordDelivery(db: Db, d: NewDelivery): Promise<DeliveryRow & { inserted: boolean; conflict: boolean }> {
  const differs = 'webhook_deliveries.body_sha256 IS NOT NULL AND webhook_deliveries.body_sha256 <> EXCLUDED.body_sha256';
  const r = await db.query<DeliveryRow & { inserted: boolean; conflict: boolean }>(
    `INSERT INTO webhook_deliveries (source, webhook_id, event_type, subject, payload, job_id, outcome, signal_attempted_at, processed_at,
                                     body_sha256, source_tenant_id, job_type, signal_name, signal_arg, refusal)
     VALUES ($1, $2, $3, $4, $5, $6, $7,
             CASE WHEN $7 = 'pending_signal' THEN now() END,
             CASE WHEN $7 IN ('ignored', 'refused') THEN now() END, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (source, webhook_id) DO UPDATE
        SET times_received = webhook_deliveries.times_received + CASE WHEN ${differs} THEN 0 ELSE 1 END,
            last_received_at = CASE WHEN ${differs} THEN webhook_deliveries.last_received_at ELSE now() END,
            conflicting_deliveries = webhook_deliveries.conflicting_deliveries + CASE WHEN ${differs} THEN 1 ELSE 0 END,
            last_conflict_at = CASE WHEN ${differs} THEN now() ELSE webhook_deliveries.last_conflict_at END,
            body_sha256 = coalesce(webhook_deliveries.body_sha256, EXCLUDED.body_sha256)
     RETURNING *, (xmax = 0) AS inserted, coalesce(xmax <> 0 AND body_sha256 <> $8, false) AS conflict`,
    [
      d.source,
      d.webhookId,
      d.eventType,
      d.subject,
      JSON.stringify(d.payload),
      d.jobId,
      d.outcome,
      d.bodySha256 ?? null,
      d.sourceTenantId ?? null,
      d.jobType ?? null,
      d.signalName ?? null,
      d.signalArg === undefined ? null : JSON.stringify(d.signalArg),
      d.refusal ?? null,
    ],
  );
  return r.rows[0]!;
}

/**
 * Takes over signalling a delivery still `pending_signal` whose last signal attempt is older
 * than the lease: a redelivery after an outage signals again, while concurrent duplicates
 * (inside the lease) leave it to the delivery that is signalling right now.
 */
export async function claimPendingSignal(db: Db, source: string, webhookId: string, leaseMs: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE webhook_deliveries SET signal_attempted_at = now()
      WHERE source = $1 AND webhook_id = $2 AND outcome = 'pending_signal'
        AND (signal_attempted_at IS NULL OR signal_attempted_at < now() - make_interval(secs => $3::double precision / 1000))`,
    [source, webhookId, leaseMs],
  );
  return r.rowCount === 1;
}

/** A delivery that starts a job: `started` once the job is accepted, `refused` (with why) when the intake refuses it. */
export async function setStartOutcome(db: Db, source: string, webhookId: string, outcome: 'started' | 'refused', refusal?: string) {
  await db.query(
    `UPDATE webhook_deliveries SET outcome = $3, refusal = $4, processed_at = now()
      WHERE source = $1 AND webhook_id = $2 AND outcome = 'pending_start'`,
    [source, webhookId, outcome, refusal ?? null],
  );
}

/** Only a delivery still waiting for its signal moves on; a finished outcome never changes. */
export async function setSignalOutcome(db: Db, source: string, webhookId: string, outcome: 'signalled' | 'job_closed'): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET outcome = $3, processed_at = now()
      WHERE source = $1 AND webhook_id = $2 AND outcome = 'pending_signal'`,
    [source, webhookId, outcome],
  );
}

/**
 * The job learned its provider ID: it takes every event that arrived before (under
 * `lockSubject`). Idempotent for a retried claim by the same job.
 */
export async function claimEarlyDeliveries(db: Db, eventType: string, subject: string, jobId: string): Promise<DeliveryRow[]> {
  // A source bound to a tenant speaks only for that tenant's jobs (F3): its early event for
  // another tenant's object is refused here, as the receiver refuses a late one.
  const r = await db.query<DeliveryRow>(
    `UPDATE webhook_deliveries d
        SET job_id = $3,
            outcome = CASE WHEN d.source_tenant_id IS NULL OR d.source_tenant_id = ji.tenant_id THEN 'claimed' ELSE 'refused' END,
            refusal = CASE WHEN d.source_tenant_id IS NULL OR d.source_tenant_id = ji.tenant_id THEN d.refusal
                           ELSE 'the source is bound to another tenant than the job''s' END,
            processed_at = coalesce(d.processed_at, now())
       FROM job_intents ji
      WHERE ji.job_id = $3 AND d.event_type = $1 AND d.subject = $2
        AND (d.outcome = 'unmatched' OR (d.outcome = 'claimed' AND d.job_id = $3))
     RETURNING d.*`,
    [eventType, subject, jobId],
  );
  return r.rows.filter((d) => d.outcome === 'claimed').sort((a, b) => a.first_seen_at.getTime() - b.first_seen_at.getTime());
}

export async function getDelivery(db: Db, source: string, webhookId: string): Promise<DeliveryRow | undefined> {
  const r = await db.query<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE source = $1 AND webhook_id = $2', [source, webhookId]);
  return r.rows[0];
}

/** For the compensation scan: deliveries whose signal never got through, last tried before the cutoff. */
export async function listPendingSignals(db: Db, attemptedBefore: Date, limit: number): Promise<DeliveryRow[]> {
  const r = await db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries
      WHERE outcome = 'pending_signal' AND signal_attempted_at < $1
      ORDER BY signal_attempted_at LIMIT $2`,
    [attemptedBefore, limit],
  );
  return r.rows;
}

/**
 * The scan takes over signalling a delivery it listed: only if it is still pending and
 * nobody tried since the cutoff, so two scans (or a scan and a redelivery, whose lease this
 * renews) signal it once per lease.
 */
export async function claimStalePendingSignal(db: Db, source: string, webhookId: string, attemptedBefore: Date): Promise<boolean> {
  const r = await db.query(
    `UPDATE webhook_deliveries SET signal_attempted_at = now()
      WHERE source = $1 AND webhook_id = $2 AND outcome = 'pending_signal' AND signal_attempted_at < $3`,
    [source, webhookId, attemptedBefore],
  );
  return r.rowCount === 1;
}

// ---- retention ----

/**
 * One batch of the retention cleanup: deliveries last received more than `days` ago. A
 * delivery still `pending_signal` is never deleted (its job has not heard it yet). Once a
 * delivery is gone, a provider's retry with the same webhook-id is recorded afresh (its job
 * has long finished: `job_closed`).
 */
export function deleteExpiredDeliveries(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'webhook_deliveries', age: 'last_received_at', where: "t.outcome <> 'pending_signal'" }, days, limit);
}

/** The outcomes a delivery list filters by: each recorded one, and two read off the counters. */
export const DELIVERY_FILTER_OUTCOMES = [
  'pending_signal',
  'signalled',
  'unmatched',
  'claimed',
  'job_closed',
  'ignored',
  'pending_start',
  'started',
  'refused',
  // received more than once (a provider's redelivery, answered `duplicate`)
  'duplicate',
  // a delivery under its webhook-id came with another body (refused 409)
  'conflicting',
] as const;
export type DeliveryFilterOutcome = (typeof DELIVERY_FILTER_OUTCOMES)[number];

export interface DeliveryPageFilter {
  source?: string;
  eventType?: string;
  outcome?: DeliveryFilterOutcome;
  /** Keyset: the last row of the previous page. */
  after?: { firstSeenUs: string; source: string; webhookId: string };
  limit: number;
}

export type DeliveryListRow = Omit<DeliveryRow, 'payload' | 'signal_arg' | 'body_sha256'> & { first_seen_us: string };

/**
 * One page of deliveries, newest first, by keyset on (first_seen_at, source, webhook_id) (index
 * `webhook_deliveries_newest`, migration 0042), one row more than the page to know whether
 * another follows. Never the payload or the signal's argument: they hold the event's data.
 */
export async function pageDeliveries(db: Db, f: DeliveryPageFilter): Promise<DeliveryListRow[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (f.source !== undefined) where.push(`source = ${param(f.source)}`);
  if (f.eventType !== undefined) where.push(`event_type = ${param(f.eventType)}`);
  if (f.outcome === 'duplicate') where.push('times_received > 1');
  else if (f.outcome === 'conflicting') where.push('conflicting_deliveries > 0');
  else if (f.outcome !== undefined) where.push(`outcome = ${param(f.outcome)}`);
  if (f.after) {
    const at = `to_timestamp(0) + ${param(f.after.firstSeenUs)}::bigint * interval '1 microsecond'`;
    where.push(`(first_seen_at, source, webhook_id) < (${at}, ${param(f.after.source)}, ${param(f.after.webhookId)})`);
  }
  const r = await db.query<DeliveryListRow>(
    `SELECT source, webhook_id, event_type, subject, job_id, outcome, times_received, first_seen_at, last_received_at,
            signal_attempted_at, processed_at, conflicting_deliveries, last_conflict_at, source_tenant_id, job_type,
            signal_name, refusal, (extract(epoch FROM first_seen_at) * 1000000)::bigint::text AS first_seen_us
       FROM webhook_deliveries ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY first_seen_at DESC, source DESC, webhook_id DESC
      LIMIT ${param(f.limit + 1)}`,
    values,
  );
  return r.rows;
}
