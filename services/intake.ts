import type { Client } from '@temporalio/client';
import { CLOCK_SKEW_MS, latestRun, onStartPath, startExistingIntent, startJobWorkflow } from './start-job.js';
import type pg from 'pg';
import { z } from 'zod';
import {
  isTerminalState,
  PRIORITIES,
  UNFINISHED_STATES,
  type JobArgs,
  type JobBudgets,
  type JobState,
  type JobType,
  type Priority,
} from '../contract/job-types.js';
import type { JobDefinition } from '../job-api/define.js';
import type { JobRegistry } from '../job-api/registry.js';
import { pgOr503, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../lib/db.js';
import {
  IdempotencyConflictError,
  NotFoundError,
  PermissionError,
  StateConflictError,
  UnavailableError,
  ValidationError,
} from '../lib/errors.js';
import { findUnstorableText } from '../lib/json-safety.js';
import { IDEMPOTENCY_KEY_PATTERN, intentIdCandidates, type IntentIds } from '../lib/ids.js';
import { zodFieldIssues } from '../lib/validation.js';
import { adoptServerSecret, type ServerSecretOption } from '../lib/secret.js';
import {
  deleteUnstartedIntent,
  findIntent,
  findIntentByKey,
  insertIntent,
  type IntentRow,
  lastSucceeded,
  type NewIntent,
} from '../store/intents.js';
import { createStartMarks, markStarted } from './start-marks.js';
import { pollAfterSeconds, toJobStatus, visibleState, type JobStatus } from './job-status.js';
import { listTenantJobs, parseListQuery, TENANT_LIST_QUERY, type JobPage, type ListJobsFilter } from './job-lists.js';
import { resolveTerms, SUBMIT_TERMS_SHAPE, type ResolvedTerms } from './submit-options.js';
import { recordDuplicate } from '../store/timeline.js';
import { mayUseHighPriority } from '../store/tenants.js';
import { admitSubmit } from './rate-limit.js';
import { tenantStage } from './timeline.js';
import { createEngineCheck } from './job-engine.js';
import { annotateSpan, currentTraceId, withSpan } from '../lib/tracing.js';
import { insertJobTrace } from '../store/job-traces.js';

export interface JobsClientDeps {
  pool: pg.Pool;
  temporal: Client;
  taskQueue: string;
  /** The job types this intake accepts (`jobs/index.ts` `defaultJobRegistry`, or yours). */
  jobs: JobRegistry;
  /** Deadline for one Temporal start call. Default 5000 ms. */
  startTimeoutMs?: number;
  /**
   * `getJob` of an unfinished job also asks Temporal what holds it (`engine`), within this
   * deadline; past it the answer comes without the field. Default 1500 ms (ENGINE_CHECK_TIMEOUT_MS).
   */
  engineCheckTimeoutMs?: number;
  /** Per job type overrides of the retry budget (config `JOB_BUDGETS`); default none. */
  budgets?: JobBudgets;
  /** Types whose new jobs take the fast path (config `FAST_PATH_JOB_TYPES`); default none. */
  fastPath?: ReadonlySet<string>;
  /** Retry-After advertised when Temporal or Postgres cannot take the job. Default 5 s. */
  unavailableRetryAfterSeconds?: number;
  /**
   * How long the "workflow started" marks of fresh submissions gather before one statement
   * writes them all (`services/start-marks.ts`; config `INTAKE_START_MARK_MS`). Default 100 ms;
   * 0 writes each before `submitJob` returns. Call `close()` before ending the pool.
   */
  startMarkWindowMs?: number;
  /**
   * The server secret job IDs and key hashes derive from (`DURABLE_JOBS_SECRET`, newest
   * first; `lib/secret.ts`). Default: the one this process installed (`durable-jobs api`, the
   * test stack); none at all is a ConfigError here. Workers and API processes share it.
   */
  secret?: ServerSecretOption;
}

export interface SubmitJobRequest {
  tenantId: string;
  type: string;
  /** One business intent, 8-255 visible ASCII characters. Never logged or stored raw. */
  idempotencyKey: string;
  input: unknown;
  /** Default `normal`. */
  priority?: Priority;
  /**
   * Start no earlier than this (ISO 8601 with a zone, or a Date), at most 365 days ahead; a
   * time already past starts it at once. Not with `delaySeconds`. Default: at once.
   */
  runAt?: string | Date;
  /** Start this many seconds after acceptance (0 to 365 days). Not with `runAt`. Default: at once. */
  delaySeconds?: number;
  /** Business tags to find the job by (`listJobs({ tag: 'key:value' })`): at most 10. Default none. */
  tags?: Record<string, string>;
}

export interface SubmitJobResult {
  jobId: string;
  status: JobState;
  /** True when this intent had already been accepted: nothing new was started. */
  replayed: boolean;
  /**
   * When to poll the status: absent for a duplicate of a finished job (succeeded,
   * dead-lettered or cancelled), whose status will not change however long the client waits.
   * For a scheduled job: the seconds until its time.
   */
  retryAfterSeconds?: number;
  /** A delayed job: when it may start (UTC). */
  scheduledFor?: string;
}

export const PRIORITY_SCHEMA = z.enum(PRIORITIES);

/** The body of `POST /v1/jobs` (and of `submitJob` without its key): `input` is checked against the type's schema. */
export const SUBMIT_BODY_SCHEMA = z
  .object({
    type: z.string().min(1, 'type is required'),
    input: z.record(z.string(), z.unknown()),
    priority: PRIORITY_SCHEMA.optional(),
    ...SUBMIT_TERMS_SHAPE,
  })
  .strict();

/** How long a client should wait before polling a job's status. */
export const POLL_AFTER_SECONDS = 1;

function validate(
  jobs: JobRegistry,
  req: SubmitJobRequest,
  now: Date,
  byTrigger = false,
): { definition: JobDefinition; type: JobType; input: unknown; priority: Priority; terms: ResolvedTerms } {
  if (typeof req.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(req.idempotencyKey)) {
    throw new ValidationError('Idempotency-Key must be 8-255 visible ASCII characters', [
      { path: 'Idempotency-Key', message: 'required; 8-255 visible ASCII characters (0x21-0x7E)' },
    ]);
  }
  const definition = typeof req.type === 'string' ? jobs.get(req.type) : undefined;
  if (!definition) {
    throw new ValidationError(`unknown job type "${String(req.type).slice(0, 64)}"`, [
      { path: 'type', message: `must be one of: ${jobs.names.join(', ')}` },
    ]);
  }
  // A type only its triggers start (`submittable: false`): a submitted job would be a second one for a window or an event.
  if (!definition.submittable && !byTrigger) {
    const by = definition.schedule ? 'schedule' : definition.webhook ? 'webhook' : 'trigger';
    throw new ValidationError(`job type "${definition.name}" cannot be submitted`, [
      { path: 'type', message: `${definition.name} jobs are started by their ${by}; they cannot be submitted` },
    ]);
  }
  const priority = PRIORITY_SCHEMA.safeParse(req.priority ?? 'normal');
  if (!priority.success) throw new ValidationError('invalid priority', [{ path: 'priority', message: 'must be high, normal or low' }]);
  const parsed = definition.input.safeParse(req.input);
  if (!parsed.success) throw new ValidationError(`invalid input for job type "${definition.name}"`, zodFieldIssues(parsed.error, 'input'));
  const unstorable = findUnstorableText(parsed.data, 'input');
  if (unstorable) throw new ValidationError(`invalid input for job type "${definition.name}"`, [unstorable]);
  const terms = resolveTerms({ runAt: req.runAt, delaySeconds: req.delaySeconds, tags: req.tags }, now);
  return { definition, type: definition.name, input: parsed.data, priority: priority.data, terms };
}

/** `startMarkWindowMs`'s default. */
export const DEFAULT_START_MARK_WINDOW_MS = 100;

/**
 * The intake, as a library for backend code that holds a Temporal client. The HTTP API is
 * a thin shell over it. Errors are the coded classes of `lib/errors.ts`.
 */

export function createJobsClient(deps: JobsClientDeps) {
  adoptServerSecret(deps.secret, 'createJobsClient');
  const startTimeoutMs = deps.startTimeoutMs ?? 5_000;
  const retryAfter = deps.unavailableRetryAfterSeconds ?? UNAVAILABLE_RETRY_AFTER_SECONDS;
  const marks = createStartMarks(deps.pool, deps.startMarkWindowMs ?? DEFAULT_START_MARK_WINDOW_MS);
  const engineOf = createEngineCheck(deps.temporal, { timeoutMs: deps.engineCheckTimeoutMs });

  /**
   * Starts the intent's workflow, or finds that it runs. `intentCreatedAt` undefined: the
   * intent was inserted by this call, so a closed run with its ID is a previous job whose
   * intent retention deleted: a new run starts (never "started" without a run). Otherwise
   * (an existing, unstarted intent) a closed run is this intent's own unless it predates it.
   * A start that failed on the client may still have succeeded on the server (its deadline
   * passed while the server created the run): Temporal is asked, so the answer is the truth.
   * Returns how it knows the run exists: its own start, or Temporal asked after a failure.
   */
  async function startWorkflow(base: JobArgs, runAt: Date | null, intentCreatedAt?: Date): Promise<'started' | 'found'> {
    const definition = onStartPath(deps.jobs.require(base.jobType), deps.fastPath);
    const rpc = <T>(fn: () => Promise<T>) => deps.temporal.connection.withDeadline(Date.now() + startTimeoutMs, fn);
    const start = (replaceClosed: boolean) =>
      rpc(() => startJobWorkflow(deps.temporal, deps.taskQueue, definition, base, deps.budgets, { replaceClosed, runAt }));
    const attemptAt = Date.now();
    try {
      if (intentCreatedAt === undefined) await start(true);
      else await startExistingIntent(deps.temporal, deps.taskQueue, definition, base, intentCreatedAt, deps.budgets, { rpc, runAt });
      return 'started';
    } catch (err) {
      const run = await rpc(() => latestRun(deps.temporal, base.jobId)).catch(() => undefined);
      if (run && (run.running || run.startTime.getTime() >= attemptAt - CLOCK_SKEW_MS)) return 'found'; // it landed
      throw new UnavailableError('Temporal cannot take the job right now', retryAfter, { dependency: 'temporal', cause: err });
    }
  }

  /**
   * High priority runs through a pause of low and normal work (load shedding), so it is an
   * entitlement of the tenant (`tenants.may_use_high_priority`, granted by an operator), not
   * the tenant's own claim (F11). Checked before anything is written; a duplicate of an
   * earlier high-priority job is refused too once the grant is withdrawn.
   */
  async function requireHighPriority(tenantId: string): Promise<void> {
    const may = await pgOr503(() => mayUseHighPriority(deps.pool, tenantId), 'Postgres cannot take the job right now', retryAfter);
    if (may === undefined) throw new NotFoundError(`tenant "${String(tenantId).slice(0, 64)}" not found; nothing was accepted`);
    if (!may)
      throw new PermissionError(
        `tenant "${tenantId}" may not submit priority high: its settings do not allow it (an operator grants it with PATCH /v1/admin/tenants/{id} {"mayUseHighPriority": true}); nothing was accepted`,
        { slug: 'priority-not-allowed', title: 'Priority not allowed for this tenant' },
      );
  }

  /**
   * Persist first, then start, then confirm. The intent row is committed before Temporal is
   * called (no pooled connection is held across that call), with `workflow_started_at` NULL;
   * after a clean start the mark joins the next batch (`startMarkWindowMs`), after any other
   * path to a run it is written before the answer.
   * If the start fails (and Temporal, asked, has no run of it: a start that timed out on the
   * client may have succeeded, and then the job is accepted: 202) the row is removed again and
   * the client hears 503 with nothing left half accepted; a retry with the same key then goes
   * through normally. If even the removal
   * fails, the compensation scan starts the intent later and a retry finds the same job.
   * Concurrent duplicates collide on the unique index: one inserts, the others read its row.
   */
  async function submitJob(req: SubmitJobRequest, byTrigger = false): Promise<SubmitJobResult> {
    const now = new Date();
    const { type, input, priority, terms } = validate(deps.jobs, req, now, byTrigger);
    if (priority === 'high') await requireHighPriority(req.tenantId);
    // The tenant's intake rate limit (issue 38 §5), before anything is written: a 429 leaves nothing.
    await admitSubmit(deps.pool, req.tenantId);
    // Keyed with the server secret (lib/ids.ts): [0] is this intent's if it is new; the others
    // are how an intent accepted before a rotation or before keyed IDs was stored, and a
    // duplicate of one of those finds that job under its old ID.
    // The same key with another runAt, delay or tags is another intent (422); without them the hash is as it always was.
    const candidates = intentIdCandidates(req.tenantId, type, req.idempotencyKey, input, terms.hashed);
    const ids = candidates[0]!;
    const intent = {
      jobId: ids.jobId,
      tenantId: req.tenantId,
      jobType: type,
      keyHash: ids.keyHash,
      inputHash: ids.inputHash,
      input,
      priority,
      runAt: terms.runAt,
      tags: terms.tags,
    };
    annotateSpan({ jobId: ids.jobId, jobType: type, tenantId: req.tenantId });
    const older = candidates.slice(1).map((c) => c.keyHash);
    const inserted = await pgOr503(
      () => insertIntent(deps.pool, intent, { unlessKeyHashes: older }),
      'Postgres cannot take the job right now',
      retryAfter,
    ).catch((err: unknown) => {
      // Backend code gets here (the HTTP API resolves the tenant from its key first):
      // an unknown tenant is the caller's mistake to name, never a raw foreign-key error.
      const e = err as { code?: string; constraint?: string };
      if (e.code === '23503' && e.constraint === 'job_intents_tenant_id_fkey')
        throw new NotFoundError(`tenant "${String(req.tenantId).slice(0, 64)}" not found; nothing was accepted`, { cause: err });
      throw err;
    });
    if (!inserted) return replay(intent, candidates);
    let how;
    try {
      how = await startWorkflow({ jobId: intent.jobId, tenantId: intent.tenantId, jobType: type, priority }, intent.runAt);
    } catch (err) {
      await deleteUnstartedIntent(deps.pool, intent.jobId).catch(() => undefined);
      throw err;
    }
    await (how === 'started' ? marks.add(intent) : markStarted(deps.pool, intent));
    const traceId = currentTraceId(); // tracing on (lib/tracing.ts): the job's trace, for its timeline
    if (traceId) await insertJobTrace(deps.pool, intent.jobId, traceId).catch(() => undefined);
    if (intent.runAt) {
      const status = visibleState({ status: 'queued', run_at: intent.runAt });
      return {
        jobId: intent.jobId,
        status,
        replayed: false,
        retryAfterSeconds: pollAfterSeconds(status, intent.runAt, new Date()),
        scheduledFor: intent.runAt.toISOString(),
      };
    }
    return { jobId: intent.jobId, status: 'queued', replayed: false, retryAfterSeconds: POLL_AFTER_SECONDS };
  }

  async function replay(intent: NewIntent & { jobType: JobType }, candidates: IntentIds[]): Promise<SubmitJobResult> {
    const existing = await pgOr503(
      () =>
        findIntentByKey(
          deps.pool,
          intent.tenantId,
          candidates.map((c) => c.keyHash),
        ),
      'Postgres cannot take the job right now',
      retryAfter,
    );
    // Removed between our insert and this read by a request whose start failed: try again.
    if (!existing) throw new UnavailableError('the intent is being retried concurrently; retry', 1, { dependency: 'contention' });
    // Its input hash was derived the way its key hash was: compare like with like.
    const derived = candidates.find((c) => c.keyHash === existing.key_hash) ?? candidates[0]!;
    if (existing.job_type !== intent.jobType || existing.input_hash !== derived.inputHash) {
      throw new IdempotencyConflictError('this Idempotency-Key was already used with a different type or input');
    }
    // Evidence for the job's timeline (the time only); never in the way of the answer.
    await recordDuplicate(deps.pool, existing.job_id).catch(() => undefined);
    // Unmarked: another request is starting it, or its start was lost (USE_EXISTING makes a
    // second start safe); unless this client started it and its mark is still gathering.
    if (!existing.workflow_started_at && !marks.has(existing.job_id)) {
      await startWorkflow(
        { jobId: existing.job_id, tenantId: intent.tenantId, jobType: intent.jobType, priority: existing.priority },
        existing.run_at,
        existing.created_at,
      );
      await markStarted(deps.pool, { ...intent, jobId: existing.job_id, runAt: existing.run_at });
    }
    if (isTerminalState(existing.status)) return { jobId: existing.job_id, status: existing.status, replayed: true };
    const now = new Date();
    const status = visibleState(existing, now);
    return {
      jobId: existing.job_id,
      status,
      replayed: true,
      retryAfterSeconds: existing.run_at ? pollAfterSeconds(status, existing.run_at, now) : POLL_AFTER_SECONDS,
      ...(existing.run_at ? { scheduledFor: existing.run_at.toISOString() } : {}),
    };
  }

  async function loadOwned(tenantId: string, jobId: string): Promise<IntentRow> {
    const row = await pgOr503(() => findIntent(deps.pool, tenantId, jobId), undefined, retryAfter);
    if (!row) throw new NotFoundError(`job ${jobId} not found`);
    return row;
  }

  /**
   * A job's status. With `allowStale`, a job that has not succeeded yet (and whose type
   * allows it) also carries `staleResult`: the newest succeeded result of the same tenant,
   * type and input, labelled stale with its time. It is never put in `result`.
   */
  async function getJob(tenantId: string, jobId: string, opts: { allowStale?: boolean } = {}): Promise<JobStatus> {
    const row = await loadOwned(tenantId, jobId);
    const status = toJobStatus(row);
    const noResultYet = (UNFINISHED_STATES as readonly JobState[]).includes(row.status);
    // Temporal is asked only while Postgres says the job runs (a finished job's status never
    // costs a call), and only for what Postgres cannot see; it never fails or delays the answer
    // past its deadline.
    const [stage, engine] = await Promise.all([
      pgOr503(() => tenantStage(deps.pool, row), undefined, retryAfter),
      noResultYet && status.status !== 'scheduled'
        ? engineOf({ jobId: row.job_id, jobType: row.job_type, firstStartedAt: row.first_started_at })
        : undefined,
    ]);
    Object.assign(status, stage);
    if (engine) status.engine = engine;
    if (opts.allowStale && noResultYet && deps.jobs.get(row.job_type)?.staleResult === true) {
      const last = await pgOr503(
        () => lastSucceeded(deps.pool, { tenantId, jobType: row.job_type, inputHash: row.input_hash, exceptJobId: jobId }),
        undefined,
        retryAfter,
      );
      if (last) status.staleResult = { stale: true, result: last.result, at: last.finished_at.toISOString(), fromJobId: last.job_id };
    }
    return status;
  }

  /**
   * Requests cancellation of a job that has not finished. The workflow cancels its pending
   * activity (a scheduled task is never handed to a worker again) and records `cancelled`.
   */
  async function cancelJob(tenantId: string, jobId: string): Promise<JobStatus> {
    const row = await loadOwned(tenantId, jobId);
    if (row.status === 'succeeded' || row.status === 'dead_lettered') {
      throw new StateConflictError(`job ${jobId} already finished (${row.status}); nothing to cancel`);
    }
    if (row.status !== 'cancelled') {
      try {
        await deps.temporal.connection.withDeadline(Date.now() + startTimeoutMs, () => deps.temporal.workflow.getHandle(jobId).cancel());
      } catch (err) {
        const name = (err as Error).name;
        if (name !== 'WorkflowNotFoundError')
          throw new UnavailableError('Temporal cannot take the cancellation right now', retryAfter, { dependency: 'temporal', cause: err });
      }
    }
    return toJobStatus(row);
  }

  /**
   * One page of the tenant's jobs, newest first (as `getJob` shows each; never the input):
   * filtered by state (one or several), type, creation time and tag; `nextCursor` fetches the
   * next page with the same filter. A bad filter is a `ValidationError` naming it.
   */
  async function listJobs(tenantId: string, filter: ListJobsFilter = {}): Promise<JobPage> {
    const q = parseListQuery(TENANT_LIST_QUERY, filter);
    if (q.type !== undefined && !deps.jobs.get(q.type)) {
      throw new ValidationError('invalid list filter', [{ path: 'type', message: `must be one of: ${deps.jobs.names.join(', ')}` }]);
    }
    return listTenantJobs(deps.pool, tenantId, q);
  }

  /** Writes the start marks still gathering; call it before ending the pool. Submitting after it is fine. */
  const close = () => marks.flush();

  // taskQueue: the queue-health report reads Temporal's statistics for it.
  /** `submitJob` for a type's own trigger (a webhook route): also for a type that is not `submittable`. */
  // One span per submit, the root of the job's trace (its workflow start, run, steps and upstream calls are its children).
  const tracedSubmit = (req: SubmitJobRequest, byTrigger: boolean) =>
    withSpan('durable-jobs submitJob', { tenantId: String(req.tenantId).slice(0, 64) }, () => submitJob(req, byTrigger));
  const submitTriggeredJob = (req: SubmitJobRequest) => tracedSubmit(req, true);
  return {
    submitJob: (req: SubmitJobRequest) => tracedSubmit(req, false),
    submitTriggeredJob,
    getJob,
    listJobs,
    cancelJob,
    close,
    taskQueue: deps.taskQueue,
  };
}

export type JobsClient = ReturnType<typeof createJobsClient>;
