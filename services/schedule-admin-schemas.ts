/** The schedule admin's request shapes (HTTP bodies and queries, the CLI): one schema each. */
import { z } from 'zod';

/** A backfill covers at most this many windows: a larger range is refused, naming `to`. */
export const MAX_BACKFILL_WINDOWS = 100;
/** A window list covers at most this many windows of the type's grid. */
export const MAX_LISTED_WINDOWS = 200;

const REASON = z
  .string({ error: 'reason is required (a string)' })
  .trim()
  .min(1, 'reason is required')
  .max(500, 'reason must be at most 500 characters');
const OPTIONAL_REASON = z
  .string({ error: 'reason must be a string' })
  .trim()
  .min(1, 'reason must not be empty')
  .max(500, 'reason must be at most 500 characters')
  .optional();
const instant = (field: string) =>
  z.iso.datetime({ offset: true, error: `${field} must be an ISO 8601 date-time (UTC or with an offset)` });

export const PAUSE_SCHEMA = z.object({ reason: REASON }, { error: 'the body must be {"reason": "..."}' }).strict();
export const TRIGGER_SCHEMA = z.object({ reason: OPTIONAL_REASON }).strict();
export const BACKFILL_SCHEMA = z
  .object({ from: instant('from'), to: instant('to'), reason: OPTIONAL_REASON }, { error: 'the body must be {"from", "to"}' })
  .strict();
export const WINDOWS_QUERY_SCHEMA = z.object({ from: instant('from').optional(), to: instant('to').optional() }).strict();

export type BackfillRequest = z.infer<typeof BACKFILL_SCHEMA>;
export type WindowsQuery = z.infer<typeof WINDOWS_QUERY_SCHEMA>;
