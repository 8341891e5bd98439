import type { Db } from '../lib/db.js';

/** The intake's token buckets (table intake_buckets, migration 0036), one row per limited tenant. */

export interface TakeResult {
  /** A whole token was there and is taken: the submit goes on. */
  granted: boolean;
  /** Tokens left after this take (fractional while refilling). */
  tokens: number;
  /** The tenant's rate, tokens per second. */
  ratePerSecond: number;
}

/**
 * Takes one token from the tenant's bucket, in one statement every API process runs alike.
 * The refill is arithmetic on the stored time (tokens + seconds since the last take * rate,
 * capped at the burst), so no process keeps state and no timer refills anything. Why INSERT
 * ... ON CONFLICT DO UPDATE and not SELECT then UPDATE: the upsert locks the row for the
 * statement, so concurrent takes from several processes queue on it and each sees the one
 * before it; a read-then-write would let two read the same last token. A bucket's first take
 * inserts it full (less this token). The rate and burst come from the tenant's row in the
 * same statement, so a changed limit applies from the next submit, in every process.
 * Returns undefined when the tenant has no limit (nothing is written then).
 */
export async function takeToken(db: Db, tenantId: string): Promise<TakeResult | undefined> {
  // The level before this take: what was left plus the refill since, capped at the burst. The
  // statement's own start time on both sides (a take that waited for the row lock may start
  // before the stored time: it refills nothing, and the stored time never goes back).
  const level = `least(EXCLUDED.burst, b.tokens + greatest(0, extract(epoch FROM statement_timestamp() - b.refilled_at)) * EXCLUDED.rate)`;
  const r = await db.query<{ granted: boolean; tokens: number; rate: number }>({
    name: 'take-intake-token',
    text: `INSERT INTO intake_buckets AS b (tenant_id, tokens, refilled_at, granted, rate, burst)
           SELECT id, burst - 1, statement_timestamp(), true, rate, burst
             FROM (SELECT id, intake_rate_per_second AS rate,
                          coalesce(intake_burst, greatest(1, ceil(intake_rate_per_second)))::float8 AS burst
                     FROM tenants WHERE id = $1 AND intake_rate_per_second IS NOT NULL) cfg
           ON CONFLICT (tenant_id) DO UPDATE
              SET tokens = CASE WHEN ${level} >= 1 THEN ${level} - 1 ELSE ${level} END,
                  granted = ${level} >= 1,
                  refilled_at = greatest(b.refilled_at, statement_timestamp()),
                  rate = EXCLUDED.rate,
                  burst = EXCLUDED.burst
           RETURNING b.granted, b.tokens, b.rate`,
    values: [tenantId],
  });
  const row = r.rows[0];
  return row ? { granted: row.granted, tokens: row.tokens, ratePerSecond: row.rate } : undefined;
}

/** The tenant's limit: rate per second and burst (null: none). */
export async function setIntakeLimit(
  db: Db,
  tenantId: string,
  limit: { ratePerSecond: number | null; burst: number | null },
  changedBy: string,
): Promise<boolean> {
  const r = await db.query(
    `UPDATE tenants SET intake_rate_per_second = $2, intake_burst = $3, intake_limit_changed_by = $4, intake_limit_changed_at = now()
      WHERE id = $1`,
    [tenantId, limit.ratePerSecond, limit.burst, changedBy],
  );
  return r.rowCount === 1;
}
