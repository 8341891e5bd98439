import type pg from 'pg';

type Db = pg.Pool | pg.PoolClient;

export interface OutboxRow {
  id: string;
  job_id: string;
  kind: string;
  effect_key: string;
  payload: Record<string, unknown>;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
}

/** Written in the same transaction as the job's result; ON CONFLICT keeps it once per effect key. */
export async function insertOutbox(db: Db, o: { jobId: string; kind: string; effectKey: string; payload: unknown; deliverWithinMs: number }): Promise<void> {
  await db.query(
    `INSERT INTO outbox (job_id, kind, effect_key, payload, deliver_by)
     VALUES ($1, $2, $3, $4, now() + ($5 || ' milliseconds')::interval)
     ON CONFLICT (effect_key) DO NOTHING`,
    [o.jobId, o.kind, o.effectKey, JSON.stringify(o.payload), String(o.deliverWithinMs)],
  );
}

export async function pendingOutboxForJob(db: Db, jobId: string): Promise<OutboxRow[]> {
  const r = await db.query<OutboxRow>(`SELECT * FROM outbox WHERE job_id = $1 AND state = 'pending' ORDER BY id`, [jobId]);
  return r.rows;
}

export async function markOutbox(db: Db, id: string, state: 'delivered' | 'failed', error: string | null): Promise<void> {
  await db.query(
    `UPDATE outbox SET state = $2, attempts = attempts + 1, last_error = $3,
            delivered_at = CASE WHEN $2 = 'delivered' THEN now() ELSE delivered_at END
      WHERE id = $1 AND state = 'pending'`,
    [id, state, error],
  );
}

