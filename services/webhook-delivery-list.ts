/**
 * The inbound webhook deliveries for operators (issue 38 §8): by source, event and outcome,
 * newest first, with an opaque keyset cursor like `GET /v1/admin/jobs`'s. What a delivery
 * did is what its row records: its outcome, how often it was received (a redelivery is
 * answered `duplicate`), conflicting bodies under its webhook-id (refused 409), the job it
 * routed to or started, the signal, and why it was refused. Never the event's data.
 * (A delivery whose signature fails is refused before anything is recorded: it has no row.)
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import { ValidationError } from '../lib/errors.js';
import { DELIVERY_FILTER_OUTCOMES, pageDeliveries, type DeliveryListRow } from '../store/webhook-deliveries.js';

const text = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(200, `${field} must be at most 200 characters`);

export const DELIVERY_LIST_SCHEMA = z
  .object({
    source: text('source').optional(),
    event: text('event').optional(),
    outcome: z.enum(DELIVERY_FILTER_OUTCOMES, { error: `outcome must be one of: ${DELIVERY_FILTER_OUTCOMES.join(', ')}` }).optional(),
    limit: z.coerce
      .number({ error: 'limit must be a number' })
      .int('limit must be a whole number')
      .min(1, 'limit must be at least 1')
      .max(200, 'limit must be at most 200')
      .default(50),
    cursor: z.string().max(1000, 'at most 1000 characters').optional(),
  })
  .strict();
export type DeliveryListQuery = z.infer<typeof DELIVERY_LIST_SCHEMA>;

/** The list a cursor belongs to: its filter, not its page size. */
const listHash = (q: DeliveryListQuery) =>
  createHash('sha256')
    .update(JSON.stringify([q.source ?? null, q.event ?? null, q.outcome ?? null]))
    .digest('base64url')
    .slice(0, 16);

const CURSOR_SHAPE = z
  .object({
    v: z.literal(1),
    at: z.string().regex(/^-?\d{1,19}$/),
    s: z.string().min(1).max(300),
    w: z.string().min(1).max(300),
    q: z.string(),
  })
  .strict();

function decodeCursor(q: DeliveryListQuery, cursor: string) {
  const bad = (message: string): never => {
    throw new ValidationError('invalid cursor', [{ path: 'cursor', message }]);
  };
  let decoded: unknown;
  try {
    decoded = /^[A-Za-z0-9_-]+$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    decoded = undefined;
  }
  const c = CURSOR_SHAPE.safeParse(decoded);
  if (!c.success) return bad('not a cursor this API issued; pass nextCursor of the previous page unchanged');
  if (c.data.q !== listHash(q)) return bad('issued for another filter; use it with the filter it came with');
  return { firstSeenUs: c.data.at, source: c.data.s, webhookId: c.data.w };
}

const encodeCursor = (q: DeliveryListQuery, last: DeliveryListRow) =>
  Buffer.from(JSON.stringify({ v: 1, at: last.first_seen_us, s: last.source, w: last.webhook_id, q: listHash(q) })).toString('base64url');

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);

function deliveryView(r: DeliveryListRow) {
  return {
    source: r.source,
    webhookId: r.webhook_id,
    event: r.event_type,
    outcome: r.outcome,
    timesReceived: r.times_received,
    conflictingDeliveries: r.conflicting_deliveries,
    ...(r.subject ? { subject: r.subject } : {}),
    ...(r.job_type ? { jobType: r.job_type } : {}),
    ...(r.job_id ? { jobId: r.job_id } : {}),
    ...(r.signal_name ? { signal: r.signal_name } : {}),
    ...(r.source_tenant_id ? { sourceTenantId: r.source_tenant_id } : {}),
    ...(r.refusal ? { refusal: r.refusal } : {}),
    firstSeenAt: r.first_seen_at.toISOString(),
    lastReceivedAt: r.last_received_at.toISOString(),
    processedAt: iso(r.processed_at),
    lastConflictAt: iso(r.last_conflict_at),
  };
}

/** One page of deliveries and the cursor of the next (none: the last page). */
export async function listDeliveries(pool: pg.Pool, q: DeliveryListQuery) {
  const rows = await pageDeliveries(pool, {
    source: q.source,
    eventType: q.event,
    outcome: q.outcome,
    after: q.cursor === undefined ? undefined : decodeCursor(q, q.cursor),
    limit: q.limit,
  });
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(deliveryView),
    ...(rows.length > q.limit && last ? { nextCursor: encodeCursor(q, last) } : {}),
    limit: q.limit,
  };
}
