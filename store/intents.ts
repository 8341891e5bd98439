import type { Upstream } from './effects.js';
import type { JobState, Priority, StoredProgress } from '../contract/job-types.js';
import type { Db } from '../lib/db.js';
export {
  addExecutionSpan,
  markRetrying,
  markRunning,
  markWaiting,
  startAttempt,
  type AttemptStart,
  type AttemptStartOptions,
} from './intent-attempts.js';
import { TERMINAL } from './intent-attempts.js';

export interface IntentRow {
  job_id: string;
  tenant_id: string;
  job_type: string;
  /** Hash of the tenant and idempotency key (`lib/ids.ts`); NULL for replays. */
  key_hash: string | null;
  input_hash: string;
  priority: Priority;
  status: JobState;
  status_reason: string | null;
  attempts: number;
  last_error: { errorClass: string; message: string; statusCode?: number } | null;
  next_attempt_at: Date | null;
  result: unknown;
  notification_state: string | null;
  replay_of: string | null;
  workflow_started_at: Date | null;
  first_started_at: Date | null;
  /** Sum of the attempts' execution spans (migration 0011); NULL for older jobs. */
  execution_ms: string | null;
  finished_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** A delayed job's start time (migration 0025); NULL: at once. */
  run_at: Date | null;
  /** The submitter's business tags (migration 0025); NULL: none. */
  tags: Record<string, string> | null;
  /** The latest progress a step reported (migration 0037); NULL: none yet. */
  progress?: StoredProgress | null;
  progress_at?: Date | null;
  /** A rerun's original job and the step it reran from (migration 0032); absent where a statement does not read them. */
  rerun_of?: string | null;
  rerun_from_step?: string | null;
}

export interface NewIntent {
  jobId: string;
  tenantId: string;
  jobType: string;
  keyHash: string | null;
  inputHash: string;
  input: unknown;
  priority: Priority;
  replayOf?: string;
  runAt?: Date | null;
  tags?: Record<string, string> | null;
}

const INTENT_COLUMNS = 'job_id, tenant_id, job_type, key_hash, input_hash, input, priority, replay_of, run_at, tags';

/**
 * Inserts the intent unless the tenant already used this key. Concurrent duplicates block
 * on the unique index until the first transaction ends, then see its row: exactly one wins.
 * `unlessKeyHashes`: the key's hashes under older derivations (`lib/ids.ts`
 * `intentIdCandidates`: an older server secret, or the unkeyed hash of before): an intent
 * stored under one of them is this intent too, so nothing is inserted and the caller finds
 * that job (it keeps its ID). The check is in the same statement: no extra round trip, and no
 * such intent is ever created any more, so no race. Returns true when this call inserted the row.
 */
export async function insertIntent(db: Db, i: NewIntent, opts: { unlessKeyHashes?: readonly string[] } = {}): Promise<boolean> {
  const values = [
    i.jobId,
    i.tenantId,
    i.jobType,
    i.keyHash,
    i.inputHash,
    JSON.stringify(i.input),
    i.priority,
    i.replayOf ?? null,
    i.runAt ?? null,
    i.tags ? JSON.stringify(i.tags) : null,
  ];
  const older = opts.unlessKeyHashes ?? [];
  const r =
    older.length === 0
      ? await db.query(
          `INSERT INTO job_intents (${INTENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
          values,
        )
      : await db.query(
          // INSERT ... SELECT: the parameters need their types spelled out (VALUES takes the columns').
          `INSERT INTO job_intents (${INTENT_COLUMNS})
           SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::text, $8::text, $9::timestamptz, $10::jsonb
            WHERE NOT EXISTS (SELECT 1 FROM job_intents WHERE tenant_id = $2 AND key_hash = ANY($11::text[]))
           ON CONFLICT DO NOTHING`,
          [...values, older],
        );
  return r.rowCount === 1;
}

/** The tenant's intent stored under any of these key hashes (a key's hashes under every accepted derivation). */
export async function findIntentByKey(db: Db, tenantId: string, keyHashes: string | readonly string[]): Promise<IntentRow | undefined> {
  const r = await db.query<IntentRow>(
    'SELECT * FROM job_intents WHERE tenant_id = $1 AND key_hash = ANY($2::text[]) ORDER BY created_at LIMIT 1',
    [tenantId, typeof keyHashes === 'string' ? [keyHashes] : keyHashes],
  );
  return r.rows[0];
}

/** Tenant-scoped: another tenant's job reads as absent. */
export async function findIntent(db: Db, tenantId: string, jobId: string): Promise<IntentRow | undefined> {
  const r = await db.query<IntentRow>('SELECT * FROM job_intents WHERE tenant_id = $1 AND job_id = $2', [tenantId, jobId]);
  return r.rows[0];
}

export async function getIntent(db: Db, jobId: string): Promise<IntentRow | undefined> {
  const r = await db.query<IntentRow>('SELECT * FROM job_intents WHERE job_id = $1', [jobId]);
  return r.rows[0];
}

export async function loadInput(db: Db, jobId: string): Promise<unknown | undefined> {
  const r = await db.query<{ input: unknown }>('SELECT input FROM job_intents WHERE job_id = $1', [jobId]);
  return r.rows[0]?.input;
}

/** Returns false when the row is gone (a concurrent request whose start failed removed it). */
export async function markWorkflowStarted(db: Db, jobId: string): Promise<boolean> {
  const r = await db.query('UPDATE job_intents SET workflow_started_at = coalesce(workflow_started_at, now()) WHERE job_id = $1', [jobId]);
  return r.rowCount === 1;
}

/**
 * Many marks in one statement, each with the time its start returned: `agoMs` before this
 * statement, on the database clock like every other timestamp. Returns the job IDs whose row
 * exists (marked now or before); a missing one was removed by a concurrent failed start.
 */
export async function markWorkflowsStarted(db: Db, marks: Array<{ jobId: string; agoMs: number }>): Promise<Set<string>> {
  const r = await db.query<{ job_id: string }>({
    name: 'mark-workflows-started',
    text: `UPDATE job_intents i
              SET workflow_started_at = coalesce(i.workflow_started_at, now() - m.ago_ms * interval '1 millisecond')
             FROM unnest($1::text[], $2::float8[]) AS m(job_id, ago_ms)
            WHERE i.job_id = m.job_id
        RETURNING i.job_id`,
    values: [marks.map((m) => m.jobId), marks.map((m) => m.agoMs)],
  });
  return new Set(r.rows.map((row) => row.job_id));
}

/**
 * Removes an intent whose workflow could not be started, so a client answered 503 leaves
 * nothing behind. Only while unstarted: a concurrent duplicate that did start it wins.
 */
export async function deleteUnstartedIntent(db: Db, jobId: string): Promise<void> {
  await db.query('DELETE FROM job_intents WHERE job_id = $1 AND workflow_started_at IS NULL', [jobId]);
}

export async function setStatus(db: Db, jobId: string, status: JobState, reason: string | null, error?: unknown): Promise<void> {
  await db.query(
    `UPDATE job_intents
        SET status = $2, status_reason = $3, last_error = coalesce($4, last_error), next_attempt_at = NULL,
            finished_at = CASE WHEN $2 IN ${TERMINAL} THEN now() ELSE finished_at END, updated_at = now()
      WHERE job_id = $1 AND status NOT IN ${TERMINAL}`,
    [jobId, status, reason, error === undefined ? null : JSON.stringify(error)],
  );
}

export async function setNotificationState(db: Db, jobId: string, state: 'pending' | 'sent' | 'failed'): Promise<void> {
  await db.query('UPDATE job_intents SET notification_state = $2, updated_at = now() WHERE job_id = $1', [jobId, state]);
}

/**
 * Held back by the degradation gate: status `deferred`, why, and since when (kept across
 * re-checks). A re-check with the same reason writes nothing, so `updatedAt` moves only
 * when something a user can see changed. A job that has started (`running`, `retrying`) is
 * deferred only by the gate that runs after a pause held it at its next step (issue 38 §4): no
 * attempt of it runs then, the step came back with nothing written.
 */
export async function markDeferred(db: Db, jobId: string, reason: string): Promise<void> {
  await db.query(
    `UPDATE job_intents
        SET status = 'deferred', status_reason = $2, updated_at = now(),
            deferred_at = CASE WHEN status = 'deferred' THEN deferred_at ELSE now() END
      WHERE job_id = $1 AND status IN ('queued', 'deferred', 'running', 'retrying')
        AND NOT (status = 'deferred' AND status_reason IS NOT DISTINCT FROM $2)`,
    [jobId, reason],
  );
}

/** The gate let a deferred job through: it waits for a worker again (`queued`), and the time it was admitted is kept. */
export async function markAdmitted(db: Db, jobId: string): Promise<void> {
  await db.query(
    `UPDATE job_intents SET status = 'queued', status_reason = NULL, admitted_at = now(), updated_at = now()
      WHERE job_id = $1 AND status = 'deferred'`,
    [jobId],
  );
}

/** Whether other jobs of this priority are still held back: a new one then queues behind them instead of overtaking. */
export async function othersDeferred(db: Db, priority: Priority, jobId: string): Promise<boolean> {
  const r = await db.query<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM job_intents WHERE status = 'deferred' AND priority = $1 AND job_id <> $2) AS any`,
    [priority, jobId],
  );
  return r.rows[0]!.any;
}

/**
 * The job's visible status and its pointer to the evidence. A job that is already
 * dead-lettered (a retried recording) only gets the pointer; finished jobs never move.
 */
export async function markJobDeadLettered(db: Db, jobId: string, deadLetterId: string, reason: string, error: unknown): Promise<void> {
  await db.query(
    `UPDATE job_intents
        SET status = 'dead_lettered', dead_letter_id = $2, status_reason = coalesce(status_reason, $3),
            last_error = coalesce($4, last_error), next_attempt_at = NULL,
            finished_at = coalesce(finished_at, now()), updated_at = now()
      WHERE job_id = $1 AND status NOT IN ('succeeded', 'cancelled')
        AND (status <> 'dead_lettered' OR dead_letter_id IS NULL)`,
    [jobId, deadLetterId, reason, JSON.stringify(error)],
  );
}

export interface ReplayJobRow {
  job_id: string;
  status: string;
  created_at: Date;
  finished_at: Date | null;
}

export async function replayJobsOf(db: Db, jobId: string): Promise<ReplayJobRow[]> {
  const r = await db.query<ReplayJobRow>(
    'SELECT job_id, status, created_at, finished_at FROM job_intents WHERE replay_of = $1 ORDER BY created_at',
    [jobId],
  );
  return r.rows;
}

export interface LastSuccess {
  job_id: string;
  result: unknown;
  finished_at: Date;
}

/**
 * The newest succeeded job of the same tenant, type and input (index
 * `job_intents_last_success`). Tenant-scoped by the first key column: another tenant's
 * result can never be found here.
 */
export async function lastSucceeded(
  db: Db,
  q: { tenantId: string; jobType: string; inputHash: string; exceptJobId: string },
): Promise<LastSuccess | undefined> {
  const r = await db.query<LastSuccess>(
    `SELECT job_id, result, finished_at FROM job_intents
      WHERE tenant_id = $1 AND job_type = $2 AND input_hash = $3 AND status = 'succeeded'
        AND finished_at IS NOT NULL AND job_id <> $4
      ORDER BY finished_at DESC LIMIT 1`,
    [q.tenantId, q.jobType, q.inputHash, q.exceptJobId],
  );
  return r.rows[0];
}

/**
 * The job's visible upstream and why. Once any effect of the job went to the fallback the
 * job says so for good: a later primary call does not hide it.
 */
export async function setJobUpstream(db: Db, jobId: string, upstream: Upstream, reason: string | null): Promise<void> {
  await db.query(
    `UPDATE job_intents SET upstream = $2, upstream_reason = $3, updated_at = now()
      WHERE job_id = $1 AND upstream IS DISTINCT FROM 'fallback'
        AND (upstream IS DISTINCT FROM $2 OR upstream_reason IS DISTINCT FROM $3)`,
    [jobId, upstream, reason],
  );
}

export interface UnstartedIntent {
  job_id: string;
  tenant_id: string;
  job_type: string;
  priority: Priority;
  created_at: Date;
  run_at: Date | null;
}

/**
 * Intents whose workflow never started, older than the grace period. The intake commits
 * the intent first and marks it started after `workflow.start` succeeds, removing it when the
 * start fails; a committed row still unmarked past the grace period was left by a lost start
 * or a lost mark (a crashed API process or trigger, a dropped connection). Oldest first, bounded.
 */
export async function listUnstartedIntents(db: Db, olderThan: Date, limit: number): Promise<UnstartedIntent[]> {
  const r = await db.query<UnstartedIntent>(
    `SELECT job_id, tenant_id, job_type, priority, created_at, run_at FROM job_intents
      WHERE workflow_started_at IS NULL AND created_at < $1
      ORDER BY created_at LIMIT $2`,
    [olderThan, limit],
  );
  return r.rows;
}

/** Only the first marker counts: a concurrent scan or trigger that marked it first makes this a no-op. */
export async function markStartedIfUnstarted(db: Db, jobId: string): Promise<boolean> {
  const r = await db.query('UPDATE job_intents SET workflow_started_at = now() WHERE job_id = $1 AND workflow_started_at IS NULL', [jobId]);
  return r.rowCount === 1;
}

/**
 * A tenant's finished jobs by final status, finished in [from, to). The digest passes
 * `to = min(period end, its own intent's creation)`: rows finishing later carry a later
 * `finished_at`, so every attempt of one digest counts the same and sends the same body
 * under its effect key.
 */
export async function countFinishedJobs(
  db: Db,
  tenantId: string,
  from: string,
  to: Date,
  exceptTypes: readonly string[] = [],
): Promise<Record<string, number>> {
  const r = await db.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM job_intents
      WHERE tenant_id = $1 AND finished_at >= $2 AND finished_at < $3 AND job_type <> ALL($4::text[])
      GROUP BY status ORDER BY status`,
    [tenantId, from, to, exceptTypes],
  );
  return Object.fromEntries(r.rows.map((x) => [x.status, Number(x.n)]));
}

/** One job as operators see it (never the input): `operatorIntent` by ID, and the rows of a list page (store/job-pages.ts). */
export type FoundIntent = IntentRow & {
  dead_letter_id: string | null;
  deferred_at: Date | null;
  admitted_at: Date | null;
  upstream: Upstream | null;
  upstream_reason: string | null;
};

/** One job by ID, across tenants, for operators (their lists are store/job-pages.ts). Never the input. */
export async function operatorIntent(db: Db, jobId: string): Promise<FoundIntent | undefined> {
  const r = await db.query<FoundIntent>(
    `SELECT job_id, tenant_id, job_type, input_hash, priority, status, status_reason, attempts, last_error, next_attempt_at,
            result, notification_state, replay_of, workflow_started_at, first_started_at, execution_ms, finished_at, created_at, updated_at,
            dead_letter_id, deferred_at, admitted_at, upstream, upstream_reason, run_at, tags, progress, progress_at, rerun_of, rerun_from_step
       FROM job_intents WHERE job_id = $1`,
    [jobId],
  );
  return r.rows[0];
}

// ---- retention ----

/**
 * A batch of finished jobs whose intent may go: finished more than `days` ago (the caller
 * never passes less than the idempotency window), and nothing points at them any more: no
 * dead letter of the job (dead letters are kept, and reference the intent), no replay job of
 * it, no notification still pending or failed, and, for a replay job, no open or replaying
 * dead letter of the job it replays (the scan ends a stuck replay from the replay job's
 * outcome). Locked, so two cleanups take different jobs; call inside a transaction that
 * deletes the jobs' rows of the other tables and then `deleteIntents`.
 */
export async function lockExpiredIntents(db: Db, days: number, limit: number): Promise<string[]> {
  const r = await db.query<{ job_id: string }>(
    `SELECT i.job_id FROM job_intents i
      WHERE i.finished_at IS NOT NULL AND i.finished_at < now() - $1::float8 * interval '1 day'
        AND i.status IN ${TERMINAL} AND i.dead_letter_id IS NULL
        AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.job_id = i.job_id)
        AND NOT EXISTS (SELECT 1 FROM job_intents r WHERE r.replay_of = i.job_id)
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = i.job_id AND o.state IN ('pending', 'failed'))
        AND (i.replay_of IS NULL OR NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.job_id = i.replay_of AND d.state IN ('open', 'replaying')))
      ORDER BY i.finished_at
      LIMIT $2
      FOR UPDATE OF i SKIP LOCKED`,
    [days, limit],
  );
  return r.rows.map((x) => x.job_id);
}

/** Deletes the intents `lockExpiredIntents` returned (the rows of the other tables first). */
export async function deleteIntents(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM job_intents WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
