/**
 * What every process that serves jobs needs before it starts: the schema migrated, the
 * configured tenants seeded, and (given a Temporal connection) the search attributes
 * registered. One helper for `npm run api`, `npm start`, the test harness, the drill and the
 * bench, so they cannot drift. Each step is idempotent and safe when several processes run it at once.
 */
import type { Connection } from '@temporalio/client';
import type pg from 'pg';
import { migrate } from '../lib/migrate.js';
import { ensureSearchAttributes } from '../lib/temporal.js';
import { upsertTenant } from '../store/tenants.js';

export interface PreparedStack {
  /** Migrations this call applied (empty when the schema was current). */
  applied: string[];
  /** Search attributes this call registered (empty when they existed or no connection was given). */
  searchAttributesAdded: string[];
}

export async function prepareStack(
  pool: pg.Pool,
  opts: {
    /** Tenants to ensure, each with its seed key; `highPriority` grants `priority: high` (never withdraws it). */
    tenants?: ReadonlyArray<{ tenantId: string; apiKey: string; highPriority?: boolean }>;
    temporal?: { connection: Connection; namespace: string };
    /** A direct Postgres URL for the migration's session lock (`DATABASE_MIGRATION_URL`; behind PgBouncer). */
    migrationUrl?: string | undefined;
  } = {},
): Promise<PreparedStack> {
  const applied = await migrate(pool, { directUrl: opts.migrationUrl });
  for (const t of opts.tenants ?? []) await upsertTenant(pool, t.tenantId, t.apiKey, { highPriority: t.highPriority });
  const searchAttributesAdded = opts.temporal ? await ensureSearchAttributes(opts.temporal.connection, opts.temporal.namespace) : [];
  return { applied, searchAttributesAdded };
}
