/**
 * The console's operations pages for backend code (issue 38 §8), validated and audited as over
 * HTTP: `createSchedulesAdmin` (the scheduled types' Schedules and windows; pause, unpause,
 * trigger, backfill) and `listWebhookDeliveries` (by source, event, outcome, keyset pages).
 * Bad input throws `ValidationError` whose `fields` name the field, and starts nothing.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { z } from 'zod';
import { ValidationError } from '../lib/errors.js';
import { zodFieldIssues } from '../lib/validation.js';
import { defaultJobRegistry } from '../jobs/index.js';
import type { JobRegistry } from '../job-api/registry.js';
import { createScheduleAdmin, type Actor } from '../services/schedule-admin.js';
import { BACKFILL_SCHEMA, PAUSE_SCHEMA, TRIGGER_SCHEMA, WINDOWS_QUERY_SCHEMA } from '../services/schedule-admin-schemas.js';
import { DELIVERY_LIST_SCHEMA, listDeliveries } from '../services/webhook-delivery-list.js';

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value ?? {});
  if (!r.success) throw new ValidationError(`invalid ${what}`, zodFieldIssues(r.error));
  return r.data;
}

export interface SchedulesAdminOptions {
  pool: pg.Pool;
  temporal: Client;
  /** The task queue the API ensured the Schedules with (their IDs' prefix). */
  taskQueue: string;
  /** Who acts: named in the Schedule's note and the audit rows. */
  actor: string;
  jobs?: JobRegistry;
}

/** `list`, `show(name)`, `windows(name, { from?, to? })`, `pause` / `unpause(name, reason)`, `trigger(name)`, `backfill(name, { from, to })`. */
export function createSchedulesAdmin(o: SchedulesAdminOptions) {
  const admin = createScheduleAdmin({ pool: o.pool, temporal: o.temporal, jobTypes: o.jobs ?? defaultJobRegistry, prefix: o.taskQueue });
  const who: Actor = { operator: o.actor, keyId: null };
  return {
    list: () => admin.list(),
    show: (name: string) => admin.show(name),
    windows: async (name: string, q: { from?: string; to?: string } = {}) =>
      admin.windows(name, parse(WINDOWS_QUERY_SCHEMA, q, 'window range')),
    pause: async (name: string, reason: string) => admin.pause(name, who, parse(PAUSE_SCHEMA, { reason }, 'pause').reason),
    unpause: async (name: string, reason: string) => admin.unpause(name, who, parse(PAUSE_SCHEMA, { reason }, 'unpause').reason),
    trigger: async (name: string, reason?: string) => admin.trigger(name, who, parse(TRIGGER_SCHEMA, { reason }, 'trigger').reason ?? null),
    backfill: async (name: string, r: { from: string; to: string; reason?: string }) =>
      admin.backfill(name, who, parse(BACKFILL_SCHEMA, r, 'backfill')),
  };
}
export type SchedulesAdmin = ReturnType<typeof createSchedulesAdmin>;

/** One page of inbound webhook deliveries, newest first; pass `nextCursor` back with the same filter. */
export async function listWebhookDeliveries(
  pool: pg.Pool,
  q: { source?: string; event?: string; outcome?: string; limit?: number; cursor?: string } = {},
) {
  return listDeliveries(pool, parse(DELIVERY_LIST_SCHEMA, q, 'delivery filter'));
}
