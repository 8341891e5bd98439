/**
 * What the job timeline reads (services/timeline.ts), one function per statement. Every
 * read names its columns: never a job's input, a result body, an outbox payload, a webhook
 * payload or a key, so the timeline cannot leak them.
 */
import type pg from 'pg';
import { queryRows } from '../lib/db.js';
import type { JobState, Priority, StoredProgress } from '../contract/job-types.js';
import type { PauseScope } from './degradation.js';
import { deleteExpired } from './live-jobs.js';

type Db = pg.Pool | pg.PoolClient;

/** A duplicate submission of an accepted intent (same tenant and key): the time only (migration 0012). */
export async function recordDuplicate(db: Db, jobId: string): Promise<void> {
  await db.query('INSERT INTO intent_duplicates (job_id) VALUES ($1)', [jobId]);
}

export async function duplicatesOf(db: Db, jobId: string): Promise<Date[]> {
  const r = await db.query<{ received_at: Date }>('SELECT received_at FROM intent_duplicates WHERE job_id = $1 ORDER BY id', [jobId]);
  return r.rows.map((x) => x.received_at);
}

export interface TimelineIntent {
  job_id: string;
  tenant_id: string;
  job_type: string;
  priority: Priority;
  status: JobState;
  status_reason: string | null;
  attempts: number;
  last_error: { errorClass: string; message: string; statusCode?: number } | null;
  next_attempt_at: Date | null;
  notification_state: string | null;
  replay_of: string | null;
  result_fence: string;
  has_result: boolean;
  workflow_started_at: Date | null;
  first_started_at: Date | null;
  finished_at: Date | null;
  deferred_at: Date | null;
  admitted_at: Date | null;
  dead_letter_id: string | null;
  upstream: string | null;
  upstream_reason: string | null;
  created_at: Date;
  updated_at: Date;
  run_at: Date | null;
  progress: StoredProgress | null;
  progress_at: Date | null;
}

/** The job's row without its input or result (`has_result` says whether one is stored). */
export async function timelineIntent(db: Db, jobId: string): Promise<TimelineIntent | undefined> {
  const r = await db.query<TimelineIntent>(
    `SELECT job_id, tenant_id, job_type, priority, status, status_reason, attempts, last_error, next_attempt_at,
            notification_state, replay_of, result_fence::text, result IS NOT NULL AS has_result, workflow_started_at,
            first_started_at, finished_at, deferred_at, admitted_at, dead_letter_id, upstream, upstream_reason, created_at, updated_at,
            run_at, progress, progress_at
       FROM job_intents WHERE job_id = $1`,
    [jobId],
  );
  return r.rows[0];
}

export interface TimelineAttempt {
  step: string;
  attempt: number;
  outcome: string;
  error_class: string | null;
  status_code: number | null;
  delay_ms: number | null;
  delay_source: 'retry-after' | 'jitter' | null;
  upstream: string | null;
  provider_code: string | null;
  started_at: Date;
  finished_at: Date;
}

export async function attemptsOf(db: Db, jobId: string): Promise<TimelineAttempt[]> {
  return queryRows<TimelineAttempt>(
    db,
    `SELECT step, attempt, outcome, error_class, status_code, delay_ms, delay_source, upstream, provider_code, started_at, finished_at
       FROM job_attempts WHERE job_id = $1 ORDER BY id`,
    [jobId],
  );
}

export interface TimelineLease {
  run_id: string;
  activity_id: string;
  attempt: number;
  activity_type: string;
  started_at: Date;
  deadline_at: Date;
  ended_at: Date | null;
  outcome: string | null;
  expired_detected_at: Date | null;
}

export async function leasesOf(db: Db, jobId: string): Promise<TimelineLease[]> {
  return queryRows<TimelineLease>(
    db,
    `SELECT run_id, activity_id, attempt, activity_type, started_at, deadline_at, ended_at, outcome, expired_detected_at
       FROM activity_leases WHERE job_id = $1 ORDER BY started_at`,
    [jobId],
  );
}

export interface TimelineEffect {
  effect_key: string;
  step: string;
  state: 'pending' | 'succeeded' | 'failed';
  provider_request_id: string | null;
  provider_id: string | null;
  attempts: number;
  reconciliations: number;
  in_doubt: boolean;
  upstream: string;
  first_attempt_at: Date;
  last_attempt_at: Date;
  updated_at: Date;
}

/** Effects of a scope (the original job's ID, also for its replays). Never the stored result. */
export async function effectsOf(db: Db, effectScope: string): Promise<TimelineEffect[]> {
  return queryRows<TimelineEffect>(
    db,
    `SELECT effect_key, step, state, provider_request_id, provider_id, attempts, reconciliations, in_doubt, upstream,
            first_attempt_at, last_attempt_at, updated_at
       FROM effects WHERE job_id = $1 ORDER BY first_attempt_at`,
    [effectScope],
  );
}

export interface TimelineOutbox {
  id: string;
  kind: string;
  effect_key: string;
  state: string;
  attempts: number;
  last_error: string | null;
  deliver_by: Date;
  created_at: Date;
  delivered_at: Date | null;
}

/** Outbox rows without their payload (it carries the recipient). */
export async function outboxOf(db: Db, jobId: string): Promise<TimelineOutbox[]> {
  return queryRows<TimelineOutbox>(
    db,
    `SELECT id::text, kind, effect_key, state, attempts, last_error, deliver_by, created_at, delivered_at
       FROM outbox WHERE job_id = $1 ORDER BY id`,
    [jobId],
  );
}

export interface TimelineDelivery {
  source: string;
  webhook_id: string;
  event_type: string;
  subject: string | null;
  job_id: string | null;
  outcome: string;
  times_received: number;
  first_seen_at: Date;
  last_received_at: Date;
  processed_at: Date | null;
}

/** Webhook deliveries routed to the job, or about one of its provider objects (not yet routed). Never the payload. */
export async function deliveriesOf(db: Db, jobId: string, providerIds: string[]): Promise<TimelineDelivery[]> {
  return queryRows<TimelineDelivery>(
    db,
    `SELECT source, webhook_id, event_type, subject, job_id, outcome, times_received, first_seen_at, last_received_at, processed_at
       FROM webhook_deliveries WHERE job_id = $1 OR subject = ANY($2::text[]) ORDER BY first_seen_at`,
    [jobId, providerIds],
  );
}

export interface TimelineDeadLetter {
  id: string;
  run_id: string;
  error_class: string;
  error_type: string | null;
  status_code: number | null;
  retry_state: string | null;
  failed_step: string | null;
  upstream: string | null;
  provider_code: string | null;
  attempts: number;
  state: string;
  discard_reason: string | null;
  replay_count: number;
  replay_id: string | null;
  replay_job_id: string | null;
  first_failure_at: Date;
  last_failure_at: Date;
  created_at: Date;
}

export async function deadLettersOf(db: Db, jobId: string): Promise<TimelineDeadLetter[]> {
  return queryRows<TimelineDeadLetter>(
    db,
    `SELECT id, run_id, error_class, error_type, status_code, retry_state, failed_step, upstream, provider_code, attempts, state, discard_reason,
            replay_count, replay_id, replay_job_id, first_failure_at, last_failure_at, created_at
       FROM dead_letters WHERE job_id = $1 ORDER BY created_at`,
    [jobId],
  );
}

export interface TimelineAction {
  dead_letter_id: string;
  action: string;
  actor: string;
  details: Record<string, unknown>;
  at: Date;
}

export async function actionsOf(db: Db, deadLetterIds: string[]): Promise<TimelineAction[]> {
  return queryRows<TimelineAction>(
    db,
    'SELECT dead_letter_id, action, actor, details, at FROM dead_letter_actions WHERE dead_letter_id = ANY($1::text[]) ORDER BY id',
    [deadLetterIds],
  );
}

export interface TimelineReplayJob {
  job_id: string;
  status: JobState;
  created_at: Date;
  finished_at: Date | null;
}

export async function replayJobsOf(db: Db, jobId: string): Promise<TimelineReplayJob[]> {
  return queryRows<TimelineReplayJob>(
    db,
    'SELECT job_id, status, created_at, finished_at FROM job_intents WHERE replay_of = $1 ORDER BY created_at',
    [jobId],
  );
}

export interface TimelineAdmission {
  round: number;
  priority: string;
  reserved_at: Date;
  slot_at: Date;
  admitted_at: Date | null;
}

export async function admissionsOf(db: Db, jobId: string): Promise<TimelineAdmission[]> {
  return queryRows<TimelineAdmission>(
    db,
    'SELECT round, priority, reserved_at, slot_at, admitted_at FROM admissions WHERE job_id = $1 ORDER BY round',
    [jobId],
  );
}

export interface TimelineAudit {
  actor: string;
  reason: string | null;
  before: { pausedPriorities?: string[]; pausedScopes?: PauseScope[] };
  after: { pausedPriorities?: string[]; pausedScopes?: PauseScope[]; recoveryRatePerMinute?: number };
  at: Date;
}

/** Degradation changes while the job was alive: a pause or resume of its priority explains a deferral. */
export async function degradationChangesBetween(db: Db, from: Date, to: Date | null): Promise<TimelineAudit[]> {
  return queryRows<TimelineAudit>(
    db,
    `SELECT actor, reason, before, after, at FROM degradation_audit
      WHERE at <= coalesce($2::timestamptz, now()) AND at >= $1::timestamptz - interval '1 day' ORDER BY id`,
    [from, to],
  );
}

export interface StageFactsRow {
  effect_step: string | null;
  effect_in_doubt: boolean | null;
  effect_state: string | null;
  effect_sent_at: Date | null;
  effect_reconciliations: number | null;
  notify_failures: number;
  outbox_pending: number;
  replay_job_id: string | null;
  replay_job_status: JobState | null;
  dl_id: string | null;
  dl_state: string | null;
  dl_failed_step: string | null;
  dl_attempts: number | null;
  dl_retry_state: string | null;
  dl_discard_reason: string | null;
}

/**
 * The few facts a tenant's `GET /v1/jobs/{id}` needs for its stage, in one statement: the
 * latest unfinished effect, failed notification attempts, pending outbox rows, and the
 * newest replay and dead letter of the job.
 */
export async function stageFacts(db: Db, jobId: string, effectScope: string): Promise<StageFactsRow> {
  const r = await db.query<StageFactsRow>(
    `SELECT e.step AS effect_step, e.in_doubt AS effect_in_doubt, e.state AS effect_state, e.last_attempt_at AS effect_sent_at,
            e.reconciliations AS effect_reconciliations,
            (SELECT count(*)::int FROM job_attempts a WHERE a.job_id = $1 AND a.step = 'notify' AND a.outcome IN ('retryable', 'non_retryable')) AS notify_failures,
            (SELECT count(*)::int FROM outbox o WHERE o.job_id = $1 AND o.state = 'pending') AS outbox_pending,
            rj.job_id AS replay_job_id, rj.status AS replay_job_status,
            dl.id AS dl_id, dl.state AS dl_state, dl.failed_step AS dl_failed_step, dl.attempts AS dl_attempts, dl.retry_state AS dl_retry_state, dl.discard_reason AS dl_discard_reason
       FROM (SELECT 1) one
       LEFT JOIN LATERAL (SELECT step, in_doubt, state, last_attempt_at, reconciliations FROM effects
                           WHERE job_id = $2 AND state <> 'succeeded' AND step NOT LIKE 'notify-%'
                           ORDER BY last_attempt_at DESC LIMIT 1) e ON true
       LEFT JOIN LATERAL (SELECT job_id, status FROM job_intents WHERE replay_of = $1 ORDER BY created_at DESC LIMIT 1) rj ON true
       LEFT JOIN LATERAL (SELECT id, state, failed_step, attempts, retry_state, discard_reason FROM dead_letters WHERE job_id = $1 ORDER BY created_at DESC LIMIT 1) dl ON true`,
    [jobId, effectScope],
  );
  return r.rows[0]!;
}

// ---- retention (intent_duplicates) ----

/** One batch of the retention cleanup: duplicates received more than `days` ago, of jobs that are not live. */
export function deleteExpiredDuplicates(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'intent_duplicates', age: 'received_at', job: 'job_id' }, days, limit);
}

export async function deleteDuplicatesOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM intent_duplicates WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
