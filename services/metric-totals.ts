import type pg from 'pg';
import { withTransaction } from '../lib/db.js';
import { advanceTotals, readTotals, type AdvanceOptions, type TotalRow } from '../store/metric-totals.js';

export { HISTOGRAMS, SCAN_REPAIR_KINDS, TIME_BUCKETS, TOTAL_METRICS, type TotalRow } from '../store/metric-totals.js';

/**
 * The cumulative counters and histograms at this instant, from Postgres: first (best effort)
 * fold the rows older than the checkpoint into the stored totals, then read the totals plus
 * the rows after it. A failed fold changes nothing (the read still counts those rows).
 */
export async function collectTotals(pool: pg.Pool, advance: AdvanceOptions = {}, onAdvanceError?: (e: Error) => void): Promise<TotalRow[]> {
  await withTransaction(pool, (tx) => advanceTotals(tx, advance)).catch((e: Error) => {
    onAdvanceError?.(e);
    return false;
  });
  return readTotals(pool);
}
