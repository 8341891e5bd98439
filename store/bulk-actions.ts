import type { Db } from '../lib/db.js';

/**
 * Bulk actions and their audit (schema/0032_bulk_actions_reruns.sql). One function per statement.
 */
export interface BulkActionRow {
  id: string;
  action: string;
  requested_by: string;
  selector: Record<string, unknown>;
  options: Record<string, unknown>;
  total: number;
  state: string;
  done: number;
  applied: number;
  skipped: number;
  failed: number;
  stop_reason: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface BulkItemRow {
  target_id: string;
  outcome: 'applied' | 'skipped' | 'failed';
  actor: string;
  detail: Record<string, unknown>;
  granted_at: Date;
  at: Date;
}

export async function insertBulkAction(
  db: Db,
  b: { id: string; action: string; requestedBy: string; selector: unknown; options: unknown; total: number },
): Promise<void> {
  await db.query(`INSERT INTO bulk_actions (id, action, requested_by, selector, options, total) VALUES ($1, $2, $3, $4, $5, $6)`, [
    b.id,
    b.action,
    b.requestedBy,
    JSON.stringify(b.selector),
    JSON.stringify(b.options),
    b.total,
  ]);
}

export async function getBulkAction(db: Db, id: string): Promise<BulkActionRow | undefined> {
  const r = await db.query<BulkActionRow>('SELECT * FROM bulk_actions WHERE id = $1', [id]);
  return r.rows[0];
}

/** Newest first, by keyset on (created_at, id) so a long history pages without OFFSET. */
export async function listBulkActions(db: Db, limit: number): Promise<BulkActionRow[]> {
  const r = await db.query<BulkActionRow>('SELECT * FROM bulk_actions ORDER BY created_at DESC, id DESC LIMIT $1', [limit]);
  return r.rows;
}

/** The item's audit row, if it was acted on already (a retried activity must not act twice). */
export async function findBulkItem(db: Db, bulkId: string, targetId: string): Promise<BulkItemRow | undefined> {
  const r = await db.query<BulkItemRow>(
    'SELECT target_id, outcome, actor, detail, granted_at, at FROM bulk_action_items WHERE bulk_id = $1 AND target_id = $2',
    [bulkId, targetId],
  );
  return r.rows[0];
}

/** Records one item under the operator's name; the first record wins (returns false for a repeat). */
export async function insertBulkItem(
  db: Db,
  i: {
    bulkId: string;
    targetId: string;
    outcome: BulkItemRow['outcome'];
    actor: string;
    detail?: Record<string, unknown>;
    grantedAt: Date;
  },
): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO bulk_action_items (bulk_id, target_id, outcome, actor, detail, granted_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [i.bulkId, i.targetId, i.outcome, i.actor, JSON.stringify(i.detail ?? {}), i.grantedAt],
  );
  return r.rowCount === 1;
}

/** Oldest first (the order they were applied in), at most `limit`. */
export async function bulkItems(db: Db, bulkId: string, limit: number): Promise<BulkItemRow[]> {
  const r = await db.query<BulkItemRow>(
    `SELECT target_id, outcome, actor, detail, granted_at, at FROM bulk_action_items
      WHERE bulk_id = $1 ORDER BY at, target_id LIMIT $2`,
    [bulkId, limit],
  );
  return r.rows;
}

/**
 * The row's counts, recomputed from the audit rows (so a retried batch never counts twice),
 * and its state as the workflow or an operator last set it. `finished`: the workflow ended.
 */
export async function refreshBulkAction(
  db: Db,
  id: string,
  o: { state?: string; stopReason?: string | null; finished?: boolean },
): Promise<void> {
  await db.query(
    `UPDATE bulk_actions b
        SET done = c.done, applied = c.applied, skipped = c.skipped, failed = c.failed,
            state = coalesce($2, b.state), stop_reason = coalesce(b.stop_reason, $3),
            finished_at = CASE WHEN $4::bool THEN coalesce(b.finished_at, now()) ELSE b.finished_at END,
            updated_at = now()
       FROM (SELECT count(*)::int AS done,
                    (count(*) FILTER (WHERE outcome = 'applied'))::int AS applied,
                    (count(*) FILTER (WHERE outcome = 'skipped'))::int AS skipped,
                    (count(*) FILTER (WHERE outcome = 'failed'))::int AS failed
               FROM bulk_action_items WHERE bulk_id = $1) c
      WHERE b.id = $1`,
    [id, o.state ?? null, o.stopReason ?? null, o.finished === true],
  );
}

export type BulkCommand = 'paused' | 'resumed' | 'stopped';

export async function insertBulkCommand(
  db: Db,
  c: { bulkId: string; command: BulkCommand; actor: string; details?: Record<string, unknown> },
): Promise<void> {
  await db.query('INSERT INTO bulk_action_commands (bulk_id, command, actor, details) VALUES ($1, $2, $3, $4)', [
    c.bulkId,
    c.command,
    c.actor,
    JSON.stringify(c.details ?? {}),
  ]);
}

export async function bulkCommandsFor(
  db: Db,
  bulkId: string,
): Promise<Array<{ command: BulkCommand; actor: string; details: Record<string, unknown>; at: Date }>> {
  const r = await db.query<{ command: BulkCommand; actor: string; details: Record<string, unknown>; at: Date }>(
    'SELECT command, actor, details, at FROM bulk_action_commands WHERE bulk_id = $1 ORDER BY id',
    [bulkId],
  );
  return r.rows;
}
