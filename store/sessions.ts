import type { Db } from '../lib/db.js';

/** The console's sessions (schema/0028_operator_sessions.sql). One function per statement. */
export interface SessionRow {
  operator: string;
  key_hash: string;
  key_id: string;
  created_at: Date;
  expires_at: Date;
}

export async function insertSession(
  db: Db,
  s: { tokenHash: string; operator: string; keyHash: string; keyId: string; absoluteSeconds: number; remoteAddr: string | null },
): Promise<SessionRow> {
  const r = await db.query<SessionRow>(
    `INSERT INTO operator_sessions (token_hash, operator, key_hash, key_id, expires_at, remote_addr)
     VALUES ($1, $2, $3, $4, now() + $5::int * interval '1 second', $6)
     RETURNING operator, key_hash, key_id, created_at, expires_at`,
    [s.tokenHash, s.operator, s.keyHash, s.keyId, s.absoluteSeconds, s.remoteAddr],
  );
  return r.rows[0]!;
}

/**
 * The live session of a token, touched: one statement decides and extends, so two requests at
 * the idle limit cannot both see it alive after one of them let it lapse. Alive means not
 * signed out, before its absolute expiry, and used within `idleSeconds` (the database clock
 * for all three, never a process's).
 */
export async function touchSession(db: Db, tokenHash: string, idleSeconds: number): Promise<SessionRow | undefined> {
  const r = await db.query<SessionRow>(
    `UPDATE operator_sessions SET last_seen_at = now()
      WHERE token_hash = $1 AND ended_at IS NULL AND expires_at > now()
        AND last_seen_at > now() - $2::int * interval '1 second'
      RETURNING operator, key_hash, key_id, created_at, expires_at`,
    [tokenHash, idleSeconds],
  );
  return r.rows[0];
}

/** Sign-out: true when a live session ended now. */
export async function endSession(db: Db, tokenHash: string): Promise<boolean> {
  const r = await db.query('UPDATE operator_sessions SET ended_at = now() WHERE token_hash = $1 AND ended_at IS NULL', [tokenHash]);
  return (r.rowCount ?? 0) > 0;
}

/** Rows past their absolute expiry for a day: nothing reads them any more. Bounded per call. */
export async function deleteExpiredSessions(db: Db, limit = 500): Promise<number> {
  const r = await db.query(
    `DELETE FROM operator_sessions WHERE ctid IN (
       SELECT ctid FROM operator_sessions WHERE expires_at < now() - interval '1 day' LIMIT $1)`,
    [limit],
  );
  return r.rowCount ?? 0;
}
