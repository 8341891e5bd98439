import type pg from 'pg';
import type { Db } from '../lib/db.js';
import type { ProviderRequestRef } from './effects.js';

export type DeadLetterState = 'open' | 'replaying' | 'replayed' | 'discarded';
export const DEAD_LETTER_STATES: readonly DeadLetterState[] = ['open', 'replaying', 'replayed', 'discarded'];

export type DeadLetterAction =
  | 'recorded'
  | 'replay_requested'
  | 'replay_started'
  | 'replay_taken_over'
  | 'replay_succeeded'
  | 'replay_failed'
  | 'replay_skipped'
  | 'discarded';

export interface DeadLetterRow {
  id: string;
  job_id: string;
  run_id: string;
  tenant_id: string;
  job_type: string;
  error_class: string;
  error_type: string | null;
  status_code: number | null;
  retry_state: string | null;
  failed_step: string | null;
  message: string;
  attempts: number;
  code_version: string;
  build_id: string | null;
  input_hash: string;
  input_ref: string;
  provider_request_ids: ProviderRequestRef[];
  /** The upstream the last failed attempt called and its own error code (migration 0021); null when none was reached. */
  upstream: string | null;
  provider_code: string | null;
  first_failure_at: Date;
  last_failure_at: Date;
  state: DeadLetterState;
  discard_reason: string | null;
  replay_count: number;
  replay_id: string | null;
  replay_job_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export type NewDeadLetter = Omit<
  DeadLetterRow,
  'state' | 'discard_reason' | 'replay_count' | 'replay_id' | 'replay_job_id' | 'created_at' | 'updated_at'
>;

export interface ActionRow {
  id: string;
  action: DeadLetterAction;
  actor: string;
  details: Record<string, unknown>;
  at: Date;
}

/**
 * Records the evidence once: the ID derives from (job, run) and the table is unique on
 * them, so a retried recording activity (or a second call) inserts nothing.
 * Returns true when this call inserted the row.
 */
export async function insertDeadLetter(db: Db, d: NewDeadLetter): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO dead_letters (id, job_id, run_id, tenant_id, job_type, error_class, error_type, status_code, retry_state,
            failed_step, message, attempts, code_version, build_id, input_hash, input_ref, provider_request_ids,
            first_failure_at, last_failure_at, upstream, provider_code)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
     ON CONFLICT DO NOTHING`,
    [
      d.id,
      d.job_id,
      d.run_id,
      d.tenant_id,
      d.job_type,
      d.error_class,
      d.error_type,
      d.status_code,
      d.retry_state,
      d.failed_step,
      d.message,
      d.attempts,
      d.code_version,
      d.build_id,
      d.input_hash,
      d.input_ref,
      JSON.stringify(d.provider_request_ids),
      d.first_failure_at,
      d.last_failure_at,
      d.upstream ?? null,
      d.provider_code ?? null,
    ],
  );
  return r.rowCount === 1;
}

export async function getDeadLetter(db: Db, id: string): Promise<DeadLetterRow | undefined> {
  const r = await db.query<DeadLetterRow>('SELECT * FROM dead_letters WHERE id = $1', [id]);
  return r.rows[0];
}

/** Row lock: replay, discard and the end of a replay change the state one at a time. */
export async function lockDeadLetter(db: pg.PoolClient, id: string): Promise<DeadLetterRow | undefined> {
  const r = await db.query<DeadLetterRow>('SELECT * FROM dead_letters WHERE id = $1 FOR UPDATE', [id]);
  return r.rows[0];
}

/** A job run dead-letters at most once (REJECT_DUPLICATE), so the latest row is the one. */
export async function deadLetterForJob(db: Db, jobId: string): Promise<DeadLetterRow | undefined> {
  const r = await db.query<DeadLetterRow>('SELECT * FROM dead_letters WHERE job_id = $1 ORDER BY created_at DESC LIMIT 1', [jobId]);
  return r.rows[0];
}

export interface DeadLetterFilter {
  state?: DeadLetterState;
  ids?: string[];
  jobType?: string;
  tenantId?: string;
  errorClass?: string;
  statusCode?: number;
  /** created_at bounds (inclusive), ISO strings. */
  since?: string;
  until?: string;
  limit: number;
  offset?: number;
}

/** Oldest first: the dead letter waiting longest is the first an operator should see. */
export async function listDeadLetters(db: Db, f: DeadLetterFilter): Promise<DeadLetterRow[]> {
  const r = await db.query<DeadLetterRow>(
    `SELECT * FROM dead_letters
      WHERE ($1::text IS NULL OR state = $1) AND ($2::text[] IS NULL OR id = ANY($2))
        AND ($3::text IS NULL OR job_type = $3) AND ($4::text IS NULL OR tenant_id = $4)
        AND ($5::text IS NULL OR error_class = $5) AND ($6::int IS NULL OR status_code = $6)
        AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at <= $8)
      ORDER BY created_at, id
      LIMIT $9 OFFSET $10`,
    [
      f.state ?? null,
      f.ids ?? null,
      f.jobType ?? null,
      f.tenantId ?? null,
      f.errorClass ?? null,
      f.statusCode ?? null,
      f.since ?? null,
      f.until ?? null,
      f.limit,
      f.offset ?? 0,
    ],
  );
  return r.rows;
}

export async function insertAction(
  db: Db,
  a: { deadLetterId: string; action: DeadLetterAction; actor: string; details?: Record<string, unknown> },
): Promise<void> {
  await db.query('INSERT INTO dead_letter_actions (dead_letter_id, action, actor, details) VALUES ($1, $2, $3, $4)', [
    a.deadLetterId,
    a.action,
    a.actor,
    JSON.stringify(a.details ?? {}),
  ]);
}

/**
 * The audit row of one replay request's decision about this dead letter, written once however
 * often the activity that decides it is retried (a retry after its commit decides the same way
 * again). Call it with the dead letter locked, as `prepareReplay` does.
 */
export async function insertReplayActionOnce(
  db: Db,
  a: { deadLetterId: string; action: DeadLetterAction; actor: string; details: { replayId: string } & Record<string, unknown> },
): Promise<void> {
  await db.query(
    `INSERT INTO dead_letter_actions (dead_letter_id, action, actor, details)
     SELECT $1, $2, $3, $4
     WHERE NOT EXISTS (
       SELECT 1 FROM dead_letter_actions WHERE dead_letter_id = $1 AND action = $2 AND details->>'replayId' = $5
     )`,
    [a.deadLetterId, a.action, a.actor, JSON.stringify(a.details), a.details.replayId],
  );
}

export async function actionsFor(db: Db, deadLetterId: string): Promise<ActionRow[]> {
  const r = await db.query<ActionRow>(
    'SELECT id, action, actor, details, at FROM dead_letter_actions WHERE dead_letter_id = $1 ORDER BY id',
    [deadLetterId],
  );
  return r.rows;
}

/** Who started the current replay: the failure of that replay is recorded in their name. */
export async function replayStartedBy(db: Db, deadLetterId: string): Promise<string | undefined> {
  const r = await db.query<{ actor: string }>(
    `SELECT actor FROM dead_letter_actions WHERE dead_letter_id = $1 AND action = 'replay_started' ORDER BY id DESC LIMIT 1`,
    [deadLetterId],
  );
  return r.rows[0]?.actor;
}

export async function markReplaying(db: Db, id: string, replayId: string, replayJobId: string, replayCount: number): Promise<void> {
  await db.query(
    `UPDATE dead_letters SET state = 'replaying', replay_id = $2, replay_job_id = $3, replay_count = $4, updated_at = now()
      WHERE id = $1`,
    [id, replayId, replayJobId, replayCount],
  );
}

/**
 * Moves a replay left by a closed replay request (`from`) to the request `to`, keeping its
 * replay job: conditional on the holder, so of two requests taking it over only the first
 * does, and never from a request still running (the caller checked that it is closed).
 */
export async function takeOverReplay(db: Db, id: string, from: string, to: string): Promise<boolean> {
  const r = await db.query(
    `UPDATE dead_letters SET replay_id = $3, updated_at = now()
      WHERE id = $1 AND state = 'replaying' AND replay_id = $2 AND replay_job_id IS NOT NULL`,
    [id, from, to],
  );
  return r.rowCount === 1;
}

/**
 * Ends a replay: `replayed`, or back to `open` so it can be replayed again. Conditional on
 * the replay job, so the second of two reporters (the failed job itself, then the replay
 * workflow) changes nothing. Returns true when this call moved the state.
 */
export async function endReplay(db: Db, id: string, replayJobId: string, outcome: 'succeeded' | 'failed'): Promise<boolean> {
  const r = await db.query(
    `UPDATE dead_letters SET state = $3, updated_at = now()
      WHERE id = $1 AND state = 'replaying' AND replay_job_id = $2`,
    [id, replayJobId, outcome === 'succeeded' ? 'replayed' : 'open'],
  );
  return r.rowCount === 1;
}

/**
 * Dead letters held by a replay since before the cutoff. Normally the replay request's
 * workflow ends each one; the compensation scan looks at these only to repair a replay
 * whose request was terminated or reset before it could.
 */
export async function listStuckReplays(db: Db, updatedBefore: Date, limit: number): Promise<DeadLetterRow[]> {
  const r = await db.query<DeadLetterRow>(
    `SELECT * FROM dead_letters WHERE state = 'replaying' AND updated_at < $1 ORDER BY updated_at LIMIT $2`,
    [updatedBefore, limit],
  );
  return r.rows;
}

export async function markDiscarded(db: Db, id: string, reason: string): Promise<void> {
  await db.query(`UPDATE dead_letters SET state = 'discarded', discard_reason = $2, updated_at = now() WHERE id = $1 AND state = 'open'`, [
    id,
    reason,
  ]);
}

/** For the health report: how many dead letters wait, and for how long the oldest has. */
export async function deadLetterFigures(db: Db): Promise<{ open: number; oldestOpenAgeSeconds: number | null }> {
  const r = await db.query<{ open: number; oldest: number | null }>(
    `SELECT count(*)::int AS open, extract(epoch FROM now() - min(created_at))::float8 AS oldest
       FROM dead_letters WHERE state = 'open'`,
  );
  const row = r.rows[0]!;
  return { open: row.open, oldestOpenAgeSeconds: row.oldest === null ? null : Math.round(row.oldest) };
}
