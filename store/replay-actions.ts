import type { Db } from '../lib/db.js';

/** The audit of a replay request's steering (schema/0024_replay_actions.sql). One function per statement. */
export type ReplayAction = 'paused' | 'resumed' | 'stopped' | 'added';

export interface ReplayActionRow {
  action: ReplayAction;
  actor: string;
  details: Record<string, unknown>;
  at: Date;
}

export async function insertReplayAction(
  db: Db,
  a: { replayId: string; action: ReplayAction; actor: string; details?: Record<string, unknown> },
): Promise<void> {
  await db.query('INSERT INTO replay_actions (replay_id, action, actor, details) VALUES ($1, $2, $3, $4)', [
    a.replayId,
    a.action,
    a.actor,
    JSON.stringify(a.details ?? {}),
  ]);
}

/** Oldest first: the order the commands were given in. */
export async function replayActionsFor(db: Db, replayId: string): Promise<ReplayActionRow[]> {
  const r = await db.query<ReplayActionRow>('SELECT action, actor, details, at FROM replay_actions WHERE replay_id = $1 ORDER BY id', [
    replayId,
  ]);
  return r.rows;
}
