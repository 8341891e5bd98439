import type { Priority } from '../contract/job-types.js';
import type { Db } from '../lib/db.js';
import { deleteExpired } from './live-jobs.js';

export interface OutboxRow {
  id: string;
  job_id: string;
  kind: string;
  effect_key: string;
  payload: Record<string, unknown>;
  state: 'pending' | 'delivered' | 'failed' | 'discarded';
  attempts: number;
  last_error: string | null;
  error_class: string | null;
  status_code: number | null;
  failed_at: Date | null;
  replays: number;
  resolved_by: string | null;
  resolution_reason: string | null;
  resolved_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}

export interface NewOutboxRow {
  jobId: string;
  kind: string;
  effectKey: string;
  payload: unknown;
  deliverWithinMs: number;
}

/**
 * The `kind` of a `NewOutboxRow` that carries several notifications at once (a job type's
 * declared targets, activities/notify-plan.ts): its payload is `{ rows: [{ kind, payload }] }`,
 * written as one row per kind, each keyed `<scope>:notify-<kind>` (the bundle's own key names
 * the scope). It exists because the step's completion (`completeWithOutbox`) takes one row.
 */
export const NOTIFICATION_BUNDLE = 'notifications';

/**
 * `insertOutbox` as a CTE of the statement that writes the job's result (store/step-result.ts
 * `writeResultFenced`), inserted only `when` the result landed: one row per element of the
 * parallel arrays. Parameters `$i..$i+4` (`insertOutboxParams`); all NULL inserts nothing.
 */
export function insertOutboxCte(i: number, when: string): string {
  const p = (k: number, type: string) => `$${i + k}::${type}`;
  return `outbox_row AS (
             INSERT INTO outbox (job_id, kind, effect_key, payload, deliver_by)
             SELECT ${p(0, 'text')}, r.kind, r.effect_key, ${p(3, 'jsonb')} -> (r.n::int - 1),
                    now() + ${p(4, 'float8')} * interval '1 millisecond'
               FROM unnest(${p(1, 'text[]')}, ${p(2, 'text[]')}) WITH ORDINALITY AS r (kind, effect_key, n)
              WHERE ${p(0, 'text')} IS NOT NULL AND ${when}
             ON CONFLICT (effect_key) DO NOTHING)`;
}

/** The rows a `NewOutboxRow` stands for: itself, or a bundle's notifications (`NOTIFICATION_BUNDLE`). */
export function outboxRowsOf(o: NewOutboxRow): Array<{ kind: string; effectKey: string; payload: unknown }> {
  if (o.kind !== NOTIFICATION_BUNDLE) return [o];
  const scope = o.effectKey.slice(0, o.effectKey.lastIndexOf(':'));
  const rows = (o.payload as { rows: Array<{ kind: string; payload: unknown }> }).rows;
  return rows.map((r) => ({ kind: r.kind, effectKey: `${scope}:notify-${r.kind}`, payload: r.payload }));
}

export function insertOutboxParams(o: NewOutboxRow | undefined): unknown[] {
  if (!o) return [null, null, null, null, null];
  const rows = outboxRowsOf(o);
  return [o.jobId, rows.map((r) => r.kind), rows.map((r) => r.effectKey), JSON.stringify(rows.map((r) => r.payload)), o.deliverWithinMs];
}

/** Written in the same transaction as the job's result; ON CONFLICT keeps it once per effect key. */
export async function insertOutbox(db: Db, o: NewOutboxRow): Promise<void> {
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

/**
 * The job's notification failed for good: its pending rows end `failed`, with the last
 * delivery attempt's class, status and message as evidence (from job_attempts, where every
 * attempt left a row), so they leave the pending figures and an operator can act on them.
 */
export async function failPendingOutbox(db: Db, jobId: string): Promise<number> {
  const r = await db.query(
    `WITH last AS (
       SELECT error_class, status_code, count(*) OVER () AS n FROM job_attempts
        WHERE job_id = $1 AND step = 'notify' ORDER BY id DESC LIMIT 1)
     UPDATE outbox SET state = 'failed', failed_at = now(),
            error_class = coalesce((SELECT error_class FROM last), 'notification_failed'),
            status_code = (SELECT status_code FROM last),
            attempts = greatest(attempts, coalesce((SELECT n FROM last), 0)::int),
            last_error = coalesce(last_error, (SELECT error_class || coalesce(' (HTTP ' || status_code || ')', '') FROM last))
      WHERE job_id = $1 AND state = 'pending'`,
    [jobId],
  );
  return r.rowCount ?? 0;
}

export async function getOutboxRow(db: Db, id: string): Promise<OutboxRow | undefined> {
  if (!/^\d{1,18}$/.test(id)) return undefined;
  const r = await db.query<OutboxRow>('SELECT * FROM outbox WHERE id = $1', [id]);
  return r.rows[0];
}

export async function listOutbox(db: Db, state: OutboxRow['state'], limit: number): Promise<Array<OutboxRow & { tenant_id: string }>> {
  const r = await db.query<OutboxRow & { tenant_id: string }>(
    `SELECT o.*, j.tenant_id FROM outbox o JOIN job_intents j ON j.job_id = o.job_id
      WHERE o.state = $1 ORDER BY coalesce(o.failed_at, o.created_at) DESC LIMIT $2`,
    [state, limit],
  );
  return r.rows;
}

/**
 * An operator's decision on a failed row, only from `failed` (so two operators cannot both
 * act): `replay` puts it back to `pending` for a new delivery with the same effect key,
 * `discard` ends it. Returns the row as it is now, or undefined if it was not `failed`.
 */
export async function resolveFailedOutbox(
  db: Db,
  id: string,
  action: 'replay' | 'discard',
  by: string,
  reason: string | null,
): Promise<OutboxRow | undefined> {
  const r = await db.query<OutboxRow>(
    `UPDATE outbox SET state = CASE WHEN $2 = 'replay' THEN 'pending' ELSE 'discarded' END,
            replays = replays + CASE WHEN $2 = 'replay' THEN 1 ELSE 0 END,
            deliver_by = CASE WHEN $2 = 'replay' THEN now() + interval '15 minutes' ELSE deliver_by END,
            resolved_by = $3, resolution_reason = $4, resolved_at = now()
      WHERE id = $1 AND state = 'failed' RETURNING *`,
    [id, action, by, reason],
  );
  return r.rows[0];
}

export interface StuckOutboxJob {
  job_id: string;
  tenant_id: string;
  job_type: string;
  priority: Priority;
  rows: number;
}

/**
 * Jobs with outbox rows still pending past their deadline, grouped per job (delivery runs
 * per job). Rows whose effect the upstream refused for good are left out: redelivering
 * cannot help them, and the job already shows the failed notification.
 */
export async function listStuckOutboxJobs(db: Db, now: Date, limit: number): Promise<StuckOutboxJob[]> {
  const r = await db.query<StuckOutboxJob>(
    `SELECT o.job_id, j.tenant_id, j.job_type, j.priority, count(*)::int AS rows
       FROM outbox o JOIN job_intents j ON j.job_id = o.job_id
      WHERE o.state = 'pending' AND o.deliver_by < $1
        AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.effect_key = o.effect_key AND e.state = 'failed')
      GROUP BY o.job_id, j.tenant_id, j.job_type, j.priority
      ORDER BY min(o.deliver_by) LIMIT $2`,
    [now, limit],
  );
  return r.rows;
}

// ---- retention ----

/**
 * One batch of the retention cleanup: notifications delivered or discarded more than `days`
 * ago, of jobs that are not live. Pending and failed rows are never deleted (they still have
 * to be delivered, or an operator has to decide about them), and so their job's intent stays too.
 */
export function deleteExpiredOutbox(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(
    db,
    { table: 'outbox', age: 'created_at', job: 'job_id', where: "t.state IN ('delivered', 'discarded')" },
    days,
    limit,
  );
}

/** The settled notifications of these (expired, finished) jobs, deleted with their intent (the row references it). */
export async function deleteSettledOutboxOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query(`DELETE FROM outbox WHERE job_id = ANY($1::text[]) AND state IN ('delivered', 'discarded')`, [jobIds]);
  return r.rowCount ?? 0;
}
