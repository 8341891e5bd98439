import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { withTransaction } from '../lib/db.js';
import { execution } from '../lib/temporal.js';
import type { Logger } from '../lib/logger.js';
import {
  deadLetterForJob,
  endReplay,
  insertAction,
  insertReplayActionOnce,
  insertDeadLetter,
  lockDeadLetter,
  markReplaying,
  replayStartedBy,
  takeOverReplay,
} from '../store/dead-letters.js';
import { failureWindow } from '../store/attempts.js';
import { effectRequestIds, effectsForJob, type ProviderRequestRef } from '../store/effects.js';
import { deadLetterReason } from '../lib/failure-reason.js';
import { getIntent, insertIntent, loadInput, markJobDeadLettered, markWorkflowStarted } from '../store/intents.js';
import type { JobArgs, StepArgs } from '../contract/job-types.js';
import type { JobRegistry } from '../job-api/registry.js';
import { onStartPath } from '../services/start-job.js';
import { withHeartbeat } from './attempt.js';

export interface DeadLetterDeps {
  pool: pg.Pool;
  log: Logger;
  codeVersion: string;
  jobs: Pick<JobRegistry, 'get'>;
  /** Types whose replays take the fast path (`FAST_PATH_JOB_TYPES`). */
  fastPathTypes?: ReadonlySet<string> | undefined;
}

/** Stable per failed run: the same failure recorded twice gets the same ID (and one row). */
export function deadLetterIdFor(jobId: string, runId: string): string {
  return `dl-${createHash('sha256').update(`${jobId}\u0000${runId}`).digest('hex').slice(0, 24)}`;
}

const MAX_MESSAGE = 500;

function stringLeaves(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => stringLeaves(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => stringLeaves(x, out));
  return out;
}

/**
 * A dead letter's message must not carry input or secrets: error messages can quote what
 * they choked on. Removes every input string value (4+ characters) that appears, then
 * e-mail addresses, long digit runs (card or account numbers), bearer tokens and webhook
 * secrets, and caps the length.
 */
export function redactMessage(message: string, input?: unknown): string {
  let m = message;
  const leaves = stringLeaves(input)
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length);
  for (const s of leaves) m = m.split(s).join('[input]');
  m = m
    .replace(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, '[email]')
    .replace(/\b\d[\d -]{10,}\d\b/g, '[number]')
    .replace(/Bearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(/whsec_[A-Za-z0-9+/=]+/g, 'whsec_[redacted]');
  return m.length > MAX_MESSAGE ? `${m.slice(0, MAX_MESSAGE)}…` : m;
}

/** The provider adapter names the failing call's request ID in its message: "(request req_...)". */
function requestIdInMessage(message: string): string | undefined {
  return /\(request ([A-Za-z0-9_-]+)\)/.exec(message)?.[1];
}

export interface RecordDeadLetterArgs extends StepArgs {
  runId: string;
  /** `workflowInfo().currentBuildId` of the workflow task that saw the failure. */
  buildId: string | null;
  /** The workflow's words; replaced by `deadLetterReason` where the retry state is known. */
  reason: string;
  error: { errorClass: string; message: string; statusCode?: number };
  errorType?: string;
  retryState?: string;
  failedStep?: string;
}

export interface PreparedReplay {
  kind: 'start';
  replayJobId: string;
  workflowType: string;
  args: StepArgs;
  /** The replay job was created by an earlier, closed replay request: it may exist already. */
  takenOver?: boolean;
}

export type ReplayPreparation = PreparedReplay | { kind: 'skip'; reason: string; replayJobId?: string };

/** Dead-letter activities. Function names are Temporal activity types. */
export function createDeadLetterActivities(deps: DeadLetterDeps) {
  /**
   * Terminal failure → evidence, in one transaction with the job's status, so the API never
   * shows `dead_lettered` without a dead letter (or the reverse). A replay job's failure is
   * not a new dead letter: it is recorded on the original's, which goes back to `open`.
   */
  async function recordDeadLetter(a: RecordDeadLetterArgs): Promise<{ deadLetterId: string }> {
    Context.current().heartbeat();
    return withTransaction(deps.pool, async (tx) => {
      const intent = await getIntent(tx, a.jobId);
      if (!intent) throw new Error(`job ${a.jobId} has no intent row`);
      const input = await loadInput(tx, a.jobId);
      const message = redactMessage(a.error.message, input);
      const error = { ...a.error, message };
      const window = await failureWindow(tx, a.jobId);
      // The attempt that failed last, not "after retries": a first-attempt 400 was never retried.
      const reason = a.retryState
        ? deadLetterReason({
            errorClass: a.error.errorClass,
            retryState: a.retryState,
            errorType: a.errorType,
            attempt: window.last_failed_attempt ?? intent.attempts,
          })
        : a.reason;
      const original = intent.replay_of ? await deadLetterForJob(tx, intent.replay_of) : undefined;
      if (original) {
        await markJobDeadLettered(tx, a.jobId, original.id, reason, error);
        if (await endReplay(tx, original.id, a.jobId, 'failed')) {
          const actor = (await replayStartedBy(tx, original.id)) ?? 'system';
          await insertAction(tx, {
            deadLetterId: original.id,
            action: 'replay_failed',
            actor,
            details: {
              replayJobId: a.jobId,
              runId: a.runId,
              errorClass: a.error.errorClass,
              statusCode: a.error.statusCode ?? null,
              errorType: a.errorType ?? null,
              retryState: a.retryState ?? null,
              message,
              codeVersion: deps.codeVersion,
              buildId: a.buildId,
            },
          });
        }
        deps.log.warn(
          { jobId: a.jobId, deadLetterId: original.id, errorClass: a.error.errorClass },
          'replay failed again; dead letter reopened',
        );
        return { deadLetterId: original.id };
      }
      const id = deadLetterIdFor(a.jobId, a.runId);
      const scope = a.effectScope ?? a.jobId;
      const requestIds: ProviderRequestRef[] = await effectRequestIds(tx, scope);
      const failedRequest = requestIdInMessage(a.error.message);
      if (failedRequest && !requestIds.some((r) => r.requestId === failedRequest)) {
        // Name it by its effect step (like the others): the last effect that did not succeed.
        const unfinished = (await effectsForJob(tx, scope)).filter((e) => e.state !== 'succeeded').at(-1);
        requestIds.push({ step: unfinished?.step ?? a.failedStep ?? 'unknown', requestId: failedRequest, outcome: 'failed' });
      }
      const now = new Date();
      const inserted = await insertDeadLetter(tx, {
        id,
        job_id: a.jobId,
        run_id: a.runId,
        tenant_id: intent.tenant_id,
        job_type: intent.job_type,
        error_class: a.error.errorClass,
        error_type: a.errorType ?? null,
        status_code: a.error.statusCode ?? null,
        retry_state: a.retryState ?? null,
        failed_step: a.failedStep ?? null,
        message,
        // All its steps' attempts (charge once + receipt once = 2), where the job shows its
        // highest attempt (1): readers see both labelled (dlq show, the console, the timeline).
        attempts: Math.max(window.attempts, intent.attempts),
        code_version: deps.codeVersion,
        build_id: a.buildId,
        input_hash: intent.input_hash,
        input_ref: `job_intents:${a.jobId}`,
        provider_request_ids: requestIds,
        upstream: window.upstream,
        provider_code: window.provider_code,
        first_failure_at: window.first_failure_at ?? now,
        last_failure_at: window.last_failure_at ?? now,
      });
      if (inserted) await insertAction(tx, { deadLetterId: id, action: 'recorded', actor: 'system', details: { runId: a.runId, reason } });
      await markJobDeadLettered(tx, a.jobId, id, reason, error);
      if (inserted) deps.log.warn({ jobId: a.jobId, deadLetterId: id, errorClass: a.error.errorClass }, 'job dead-lettered');
      return { deadLetterId: id };
    });
  }

  /**
   * Claims one dead letter for a replay and creates the new job execution
   * `<jobId>-replay-<n>` (its own intent row: no key, input copied, linked by replay_of).
   * Idempotent per replay request: a retried call returns the job it already created.
   * `takeOver` (the fast path's callers, which can await a job started by someone else): a
   * dead letter left `replaying` by a closed replay request (`takeOverFrom` names the one the
   * request re-sends; any other is described first) is taken over with its replay job,
   * started if it never was, else awaited.
   */
  async function prepareReplay(a: {
    deadLetterId: string;
    replayId: string;
    actor: string;
    takeOver?: boolean;
    takeOverFrom?: string;
  }): Promise<ReplayPreparation> {
    return withTransaction(deps.pool, async (tx) => {
      const dl = await lockDeadLetter(tx, a.deadLetterId);
      if (!dl) return { kind: 'skip', reason: 'not found' };
      const definition = deps.jobs.get(dl.job_type);
      if (!definition) return { kind: 'skip', reason: `job type ${dl.job_type} is unknown to this code version` };
      const intent = await getIntent(tx, dl.job_id);
      if (!intent) return { kind: 'skip', reason: 'original job row is missing' };
      const args: JobArgs = { jobId: '', tenantId: dl.tenant_id, jobType: dl.job_type, priority: intent.priority };
      const workflowType = onStartPath(definition, deps.fastPathTypes).workflowType;
      if (dl.state === 'replaying' && dl.replay_id === a.replayId && dl.replay_job_id) {
        return {
          kind: 'start',
          replayJobId: dl.replay_job_id,
          workflowType,
          args: { ...args, jobId: dl.replay_job_id, effectScope: dl.job_id },
        };
      }
      // The request names the closed replay it re-sends; a dead letter it did not know was
      // held (a closed replay's late prepare can commit after the request read it as `open`:
      // Temporal does not stop a terminated workflow's running activities) is taken over too,
      // once its holder is seen closed.
      const heldJob = a.takeOver && dl.state === 'replaying' && dl.replay_id !== a.replayId ? dl.replay_job_id : null;
      const from =
        heldJob &&
        dl.replay_id &&
        (a.takeOverFrom === dl.replay_id || (await execution(Context.current().client, dl.replay_id)).kind !== 'running')
          ? dl.replay_id
          : undefined;
      if (heldJob && from && (await takeOverReplay(tx, dl.id, from, a.replayId))) {
        await insertReplayActionOnce(tx, {
          deadLetterId: dl.id,
          action: 'replay_taken_over',
          actor: a.actor,
          details: { replayId: a.replayId, from, replayJobId: heldJob },
        });
        return {
          kind: 'start',
          replayJobId: heldJob,
          workflowType,
          args: { ...args, jobId: heldJob, effectScope: dl.job_id },
          takenOver: true,
        };
      }
      // The closed request this one re-sends can still end a replay it held after this request
      // reported that dead letter as taken over (its local finish was in flight when it was
      // terminated): the job this request took over has replayed it, so the takeover is
      // complete. The replay job is awaited (it has closed) and reported as this request's.
      if (a.takeOver && dl.state === 'replayed' && a.takeOverFrom !== undefined && dl.replay_id === a.takeOverFrom && dl.replay_job_id) {
        await insertReplayActionOnce(tx, {
          deadLetterId: dl.id,
          action: 'replay_taken_over',
          actor: a.actor,
          details: { replayId: a.replayId, from: a.takeOverFrom, replayJobId: dl.replay_job_id, alreadyReplayed: true },
        });
        return {
          kind: 'start',
          replayJobId: dl.replay_job_id,
          workflowType,
          args: { ...args, jobId: dl.replay_job_id, effectScope: dl.job_id },
          takenOver: true,
        };
      }
      if (dl.state !== 'open') {
        // Discarded (or replayed, or held by another replay) since the request: never by accident.
        await insertReplayActionOnce(tx, {
          deadLetterId: dl.id,
          action: 'replay_skipped',
          actor: a.actor,
          details: { replayId: a.replayId, state: dl.state },
        });
        return {
          kind: 'skip',
          reason: `dead letter is ${dl.state}${dl.replay_id && dl.replay_id !== a.replayId ? ` (by ${dl.replay_id})` : ''}`,
          ...(dl.replay_job_id && dl.state !== 'discarded' ? { replayJobId: dl.replay_job_id } : {}),
        };
      }
      const n = dl.replay_count + 1;
      const replayJobId = `${dl.job_id}-replay-${n}`;
      await insertIntent(tx, {
        jobId: replayJobId,
        tenantId: dl.tenant_id,
        jobType: dl.job_type,
        keyHash: null,
        inputHash: intent.input_hash,
        input: await loadInput(tx, dl.job_id),
        priority: intent.priority,
        replayOf: dl.job_id,
      });
      // The replay workflow starts this job right after this activity; its history makes
      // that start certain, so no repair scan should ever start it a second way.
      await markWorkflowStarted(tx, replayJobId);
      await markReplaying(tx, dl.id, a.replayId, replayJobId, n);
      await insertAction(tx, {
        deadLetterId: dl.id,
        action: 'replay_started',
        actor: a.actor,
        details: { replayId: a.replayId, replayJobId },
      });
      return { kind: 'start', replayJobId, workflowType, args: { ...args, jobId: replayJobId, effectScope: dl.job_id } };
    });
  }

  /** Ends one replay (no-op when the failed replay job already reported itself). */
  async function finishReplay(a: {
    deadLetterId: string;
    replayId: string;
    replayJobId: string;
    actor: string;
    outcome: 'succeeded' | 'failed';
    error?: string;
  }): Promise<void> {
    await withTransaction(deps.pool, async (tx) => {
      if (!(await endReplay(tx, a.deadLetterId, a.replayJobId, a.outcome))) return;
      await insertAction(tx, {
        deadLetterId: a.deadLetterId,
        action: a.outcome === 'succeeded' ? 'replay_succeeded' : 'replay_failed',
        actor: a.actor,
        details: { replayId: a.replayId, replayJobId: a.replayJobId, ...(a.error ? { message: redactMessage(a.error) } : {}) },
      });
    });
  }

  /**
   * Waits for a taken-over replay job that an earlier request started (it outlives that
   * request: ABANDON) to close, and says how it ended from its row, written before it closes.
   */
  async function awaitReplayJob(a: { replayJobId: string }): Promise<'succeeded' | 'failed'> {
    const ctx = Context.current();
    return withHeartbeat(async () => {
      await ctx.client.workflow
        .getHandle(a.replayJobId)
        .result()
        .catch(() => undefined); // failed, cancelled or terminated: the row says which
      const intent = await getIntent(deps.pool, a.replayJobId);
      return intent?.status === 'succeeded' ? 'succeeded' : 'failed';
    });
  }

  return { recordDeadLetter, prepareReplay, finishReplay, awaitReplayJob };
}

export type DeadLetterActivities = ReturnType<typeof createDeadLetterActivities>;
