/**
 * Dead letters and their replay, the use case behind `/v1/dead-letters*` and `npm run dlq`:
 * the evidence view, the dry run, starting a replay (its actions and the workflow start commit
 * together), steering it, and discarding with a reason. HTTP-free: errors are the coded classes.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import { z } from 'zod';
import {
  replayAddSignal,
  replayPauseSignal,
  replayProgressQuery,
  replayResumeSignal,
  replayStopSignal,
  type ReplayProgress,
} from '../contract/messages.js';
import type { JobRegistry } from '../job-api/registry.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS, withTransaction } from '../lib/db.js';
import { NotFoundError, StateConflictError, UnavailableError } from '../lib/errors.js';
import { execution } from '../lib/temporal.js';
import { taskQueueOf } from '../job-api/define.js';
import { codeChanged, replayCodeVersion, type ReplayCodeVersion } from './worker-versions.js';
import { effectKeyFor, inputHash, inputHashMatches } from '../lib/ids.js';
import {
  actionsFor,
  getDeadLetter,
  insertAction,
  listDeadLetters,
  lockDeadLetter,
  markDiscarded,
  type DeadLetterFilter,
  type DeadLetterRow,
} from '../store/dead-letters.js';
import { effectsForJob } from '../store/effects.js';
import { FILTER_SCHEMA, REPLAY_SCHEMA } from './dead-letter-schemas.js';
import { insertReplayAction, replayActionsFor } from '../store/replay-actions.js';
import { loadInput, replayJobsOf } from '../store/intents.js';
import type { replayDeadLetters } from '../workflows/replay.js';

/** The API's view of a dead letter: evidence only, never input. Times are ISO 8601 UTC. */
export function deadLetterView(d: DeadLetterRow) {
  return {
    id: d.id,
    jobId: d.job_id,
    runId: d.run_id,
    tenantId: d.tenant_id,
    jobType: d.job_type,
    state: d.state,
    errorClass: d.error_class,
    errorType: d.error_type,
    statusCode: d.status_code,
    retryState: d.retry_state,
    failedStep: d.failed_step,
    message: d.message,
    attempts: d.attempts,
    codeVersion: d.code_version,
    buildId: d.build_id,
    inputHash: d.input_hash,
    inputRef: d.input_ref,
    providerRequestIds: d.provider_request_ids,
    // The upstream that refused, in its own words (migration 0021): only when the failure reached one.
    ...(d.upstream ? { upstream: d.upstream } : {}),
    ...(d.provider_code ? { providerCode: d.provider_code } : {}),
    firstFailureAt: d.first_failure_at.toISOString(),
    lastFailureAt: d.last_failure_at.toISOString(),
    ...(d.discard_reason ? { discardReason: d.discard_reason } : {}),
    replayCount: d.replay_count,
    ...(d.replay_id ? { replayId: d.replay_id, replayJobId: d.replay_job_id } : {}),
    createdAt: d.created_at.toISOString(),
    updatedAt: d.updated_at.toISOString(),
  };
}

// The request schemas live beside this module (size); routes and OpenAPI import them from here.
export { ADD_SCHEMA, DISCARD_SCHEMA, FILTER_SCHEMA, LIST_SCHEMA, REPLAY_SCHEMA, STOP_SCHEMA } from './dead-letter-schemas.js';

export type ReplayRequest = z.infer<typeof REPLAY_SCHEMA>;

export interface EffectPreview {
  step: string;
  effectKey: string;
  action: 'reuse' | 'execute';
  state: 'succeeded' | 'failed' | 'pending' | 'absent';
  inDoubt?: boolean;
}

export interface ReplayPreview {
  deadLetterId: string;
  jobId: string;
  jobType: string;
  state: string;
  replayJobId: string;
  effects: EffectPreview[];
  changed: { codeVersion: boolean; inputHash: boolean };
  recorded: { codeVersion: string; buildId: string | null; inputHash: string };
  /** `codeVersion` is that of the workers that would run the replay (its type's task queue), not the API's. */
  current: ReplayCodeVersion & { inputHash: string };
}

/**
 * The dry run for one dead letter: per effect, `reuse` (a stored success: no upstream call)
 * or `execute` (never ran, failed, or in doubt: called again with the same key), and what
 * changed since the failure. Unknown job types fall back to the effects already stored.
 */
export async function previewReplay(
  pool: pg.Pool,
  jobs: Pick<JobRegistry, 'get'>,
  deadLetterId: string,
  /** The code the replay would run: `replayCodeVersion` of the type's task queue (a bare string: that version, as the API's). */
  current: ReplayCodeVersion | string,
): Promise<ReplayPreview | undefined> {
  const code: ReplayCodeVersion =
    typeof current === 'string' ? { codeVersion: current, codeVersionSource: 'api', workerCodeVersions: [], taskQueue: '' } : current;
  const dl = await getDeadLetter(pool, deadLetterId);
  if (!dl) return undefined;
  const input = ((await loadInput(pool, dl.job_id)) ?? {}) as Record<string, unknown>;
  const rows = await effectsForJob(pool, dl.job_id);
  // The type's declared effects for this input, in order (keys `<jobId>:<step>`).
  const steps = [...(jobs.get(dl.job_type)?.effectsFor(input) ?? [])];
  for (const r of rows) if (!steps.includes(r.step)) steps.push(r.step);
  const effects = steps.map((step): EffectPreview => {
    const key = effectKeyFor(dl.job_id, step);
    const row = rows.find((r) => r.effect_key === key);
    if (!row) return { step, effectKey: key, action: 'execute', state: 'absent' };
    return {
      step,
      effectKey: key,
      action: row.state === 'succeeded' ? 'reuse' : 'execute',
      state: row.state,
      ...(row.state === 'pending' ? { inDoubt: row.was_in_doubt } : {}),
    };
  });
  const inputHashNow = inputHash(dl.job_type, input);
  return {
    deadLetterId: dl.id,
    jobId: dl.job_id,
    jobType: dl.job_type,
    state: dl.state,
    replayJobId: `${dl.job_id}-replay-${dl.replay_count + 1}`,
    effects,
    // Recorded under an older server secret (or unkeyed, before keyed hashes) is unchanged too.
    changed: { codeVersion: codeChanged(dl.code_version, code), inputHash: !inputHashMatches(dl.input_hash, dl.job_type, input) },
    recorded: { codeVersion: dl.code_version, buildId: dl.build_id, inputHash: dl.input_hash },
    current: { ...code, inputHash: inputHashNow },
  };
}

/** What a replay request will do with each dead letter it names. */
export interface ReplayPlan {
  /** Open: replayed as a new replay job. */
  targets: DeadLetterRow[];
  /** Left `replaying` by a closed replay request: taken over with its replay job (id → that request). */
  takeOver: Record<string, string>;
  /** Already replayed, or being replayed by a request that still runs: reported, not replayed again. */
  skipped: Array<{ deadLetterId: string; state: string; replayId: string | null; replayJobId: string | null }>;
}

/** True while the replay request's workflow runs (then it, and only it, ends its replays). */
async function replayRunning(temporal: Client, replayId: string): Promise<boolean> {
  try {
    return (await execution(temporal, replayId)).kind === 'running';
  } catch (err) {
    throw new UnavailableError('Temporal cannot say whether an earlier replay still runs', UNAVAILABLE_RETRY_AFTER_SECONDS, {
      dependency: 'temporal',
      cause: err,
    });
  }
}

/**
 * Explicit IDs: a discarded one is refused (never replayed, never skipped silently). The rest
 * make a plan, so that re-sending a request whose workflow was terminated finishes its work:
 * open ones are replayed, those a closed request left `replaying` are taken over, and those
 * already replayed (or held by a request that still runs) are skipped and reported. A request
 * with nothing left to do is refused as before (409 `dead-letter-not-open`).
 */
async function resolveTargets(
  pool: pg.Pool,
  temporal: Client,
  body: { ids?: string[]; filter?: z.infer<typeof FILTER_SCHEMA> },
): Promise<ReplayPlan> {
  if (body.filter) {
    const { limit, state: _open, ...f } = body.filter;
    const max = limit ?? 1_000;
    const plan: ReplayPlan = {
      targets: await listDeadLetters(pool, { ...f, state: 'open', limit: max } satisfies DeadLetterFilter),
      takeOver: {},
      skipped: [],
    };
    // The same filter re-sent after its replay was terminated finishes that replay's work too:
    // the matching dead letters a closed request left `replaying` are taken over (within the limit).
    const room = max - plan.targets.length;
    if (room > 0) {
      const running = new Map<string, boolean>();
      for (const r of await listDeadLetters(pool, { ...f, state: 'replaying', limit: room } satisfies DeadLetterFilter)) {
        if (!r.replay_id || !r.replay_job_id) continue;
        if (!running.has(r.replay_id)) running.set(r.replay_id, await replayRunning(temporal, r.replay_id));
        if (!running.get(r.replay_id)) plan.takeOver[r.id] = r.replay_id;
      }
    }
    return plan;
  }
  const ids = [...new Set(body.ids!)];
  const rows = await listDeadLetters(pool, { ids, limit: ids.length });
  const missing = ids.filter((id) => !rows.some((r) => r.id === id));
  if (missing.length > 0) throw new NotFoundError(`no dead letter ${missing.slice(0, 10).join(', ')}`);
  const discarded = rows.filter((r) => r.state === 'discarded');
  if (discarded.length > 0) {
    throw new StateConflictError(`discarded dead letters are never replayed: ${discarded.map((r) => r.id).join(', ')}`, {
      slug: 'dead-letter-discarded',
      title: 'Dead letter discarded',
      extra: { ids: discarded.map((r) => r.id) },
    });
  }
  const plan: ReplayPlan = { targets: [], takeOver: {}, skipped: [] };
  const running = new Map<string, boolean>();
  for (const id of ids) {
    const r = rows.find((x) => x.id === id)!;
    if (r.state === 'open') {
      plan.targets.push(r);
      continue;
    }
    if (r.state === 'replaying' && r.replay_id && r.replay_job_id) {
      if (!running.has(r.replay_id)) running.set(r.replay_id, await replayRunning(temporal, r.replay_id));
      if (!running.get(r.replay_id)) {
        plan.takeOver[r.id] = r.replay_id;
        continue;
      }
    }
    plan.skipped.push({ deadLetterId: r.id, state: r.state, replayId: r.replay_id, replayJobId: r.replay_job_id });
  }
  if (plan.targets.length === 0 && Object.keys(plan.takeOver).length === 0) {
    throw new StateConflictError(
      `only open dead letters can be replayed: ${plan.skipped.map((r) => `${r.deadLetterId} is ${r.state}`).join(', ')}`,
      {
        slug: 'dead-letter-not-open',
        title: 'Dead letter not open',
        extra: { ids: plan.skipped.map((r) => r.deadLetterId) },
      },
    );
  }
  return plan;
}

export interface DeadLetterServiceDeps {
  pool: pg.Pool;
  temporal: Client;
  jobTypes: Pick<JobRegistry, 'get'>;
  /** The jobs task queue: replay workflows and their replay jobs run there. */
  taskQueue: string;
  /** The API's own version: a dry run compares with it only when no worker polls the type's task queue. */
  codeVersion: string;
}

/**
 * A dead letter whose job type this deployment's registry does not know cannot be replayed:
 * no worker here would run it (and the replay would end "completed, skipped" doing nothing).
 * Refused before anything is written, naming the types.
 */
export function refuseUnknownTypes(jobTypes: Pick<JobRegistry, 'get'>, targets: ReadonlyArray<{ id: string; job_type: string }>): void {
  const unknown = targets.filter((t) => !jobTypes.get(t.job_type));
  if (unknown.length === 0) return;
  const types = [...new Set(unknown.map((t) => t.job_type))];
  throw new StateConflictError(
    `job type ${types.join(', ')} is not registered with this API, so no worker of this deployment runs it: ` +
      `register it (the same --jobs module as the workers) before replaying ${unknown
        .map((t) => t.id)
        .slice(0, 10)
        .join(', ')}`,
    { slug: 'job-type-unknown', title: 'Job type not registered', extra: { jobTypes: types, ids: unknown.map((t) => t.id) } },
  );
}

export type ReplayCommand =
  { command: 'pause' } | { command: 'resume' } | { command: 'stop'; reason?: string } | { command: 'add'; ids: string[] };

export function createDeadLetterService(deps: DeadLetterServiceDeps) {
  async function show(id: string) {
    const d = await getDeadLetter(deps.pool, id);
    if (!d) throw new NotFoundError(`dead letter ${id} not found`);
    const [actions, replays] = await Promise.all([actionsFor(deps.pool, d.id), replayJobsOf(deps.pool, d.job_id)]);
    return {
      ...deadLetterView(d),
      actions: actions.map((a) => ({ action: a.action, actor: a.actor, at: a.at.toISOString(), details: a.details })),
      replays: replays.map((r) => ({
        jobId: r.job_id,
        status: r.status,
        createdAt: r.created_at.toISOString(),
        finishedAt: r.finished_at?.toISOString() ?? null,
      })),
    };
  }

  /** A dry run (`dryRun: true`: the per-effect preview, nothing changes) or a started replay. */
  async function replay(body: ReplayRequest, actor: string) {
    const plan = await resolveTargets(deps.pool, deps.temporal, body);
    const { targets } = plan;
    refuseUnknownTypes(deps.jobTypes, targets);
    if (body.dryRun) {
      const previews = [];
      // The replay job runs on its type's task queue: compare with the code of the workers
      // polling it (their build IDs), once per queue, not with this API's own version.
      const byQueue = new Map<string, Promise<ReplayCodeVersion>>();
      for (const t of targets) {
        const def = deps.jobTypes.get(t.job_type);
        const queue = def ? taskQueueOf(def, deps.taskQueue) : deps.taskQueue;
        if (!byQueue.has(queue)) byQueue.set(queue, replayCodeVersion(deps.temporal, queue, deps.codeVersion));
        previews.push((await previewReplay(deps.pool, deps.jobTypes, t.id, await byQueue.get(queue)!))!);
      }
      return { dryRun: true as const, count: previews.length, deadLetters: previews };
    }
    const takeOverIds = Object.keys(plan.takeOver);
    if (targets.length === 0 && takeOverIds.length === 0)
      throw new StateConflictError('no open dead letter matches the filter', {
        status: 422,
        slug: 'nothing-to-replay',
        title: 'Nothing to replay',
      });
    const replayId = `replay-${randomUUID()}`;
    const { ids: _ids, filter: _filter, dryRun: _dry, ...options } = body;
    // Skipped ones go through the workflow too: it records why, and its progress names their replay jobs.
    const deadLetterIds = [...targets.map((t) => t.id), ...takeOverIds, ...plan.skipped.map((x) => x.deadLetterId)];
    // Actions and the start commit together: a failed start leaves no "requested" trail.
    await withTransaction(deps.pool, async (tx) => {
      for (const id of [...targets.map((t) => t.id), ...takeOverIds])
        await insertAction(tx, { deadLetterId: id, action: 'replay_requested', actor, details: { replayId, ...options } });
      try {
        await deps.temporal.workflow.start<typeof replayDeadLetters>('replayDeadLetters', {
          taskQueue: deps.taskQueue,
          workflowId: replayId,
          args: [
            {
              replayId,
              requestedBy: actor,
              deadLetterIds,
              ...(takeOverIds.length > 0 ? { takeOver: plan.takeOver } : {}),
              ...options,
            },
          ],
          staticSummary: `replay of ${deadLetterIds.length} dead letter(s), requested by ${actor}`,
        });
      } catch (err) {
        throw new UnavailableError('Temporal cannot start the replay right now', UNAVAILABLE_RETRY_AFTER_SECONDS, {
          dependency: 'temporal',
          cause: err,
        });
      }
    });
    return {
      dryRun: false as const,
      replayId,
      count: targets.length + takeOverIds.length,
      ...(takeOverIds.length > 0 ? { takenOver: takeOverIds.map((id) => ({ deadLetterId: id, from: plan.takeOver[id]! })) } : {}),
      ...(plan.skipped.length > 0 ? { skipped: plan.skipped } : {}),
    };
  }

  /** The workflow's progress, with who paused, resumed, stopped or added to it (`actions`, from replay_actions). */
  async function progress(replayId: string) {
    const [p, actions] = await Promise.all([workflowProgress(replayId), replayActionsFor(deps.pool, replayId)]);
    return { ...p, actions: actions.map((a) => ({ action: a.action, actor: a.actor, at: a.at.toISOString(), details: a.details })) };
  }

  async function workflowProgress(replayId: string): Promise<ReplayProgress> {
    const handle = deps.temporal.workflow.getHandle(replayId);
    try {
      return await handle.query(replayProgressQuery);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new NotFoundError(`replay ${replayId} not found`);
      const d = await handle.describe().catch(() => undefined);
      if (d?.status.name === 'COMPLETED') return handle.result() as Promise<ReplayProgress>;
      throw new UnavailableError('cannot read the replay progress right now', UNAVAILABLE_RETRY_AFTER_SECONDS, {
        dependency: 'temporal',
        cause: err,
      });
    }
  }

  async function steer(replayId: string, c: ReplayCommand, actor: string): Promise<void> {
    const handle = deps.temporal.workflow.getHandle(replayId);
    // The audit row and the signal commit together (the row first, the signal before COMMIT):
    // a signal Temporal refused (the replay is over) leaves no row, and no command goes unrecorded.
    const audited = (action: 'paused' | 'resumed' | 'stopped', details: Record<string, unknown>, signal: () => Promise<void>) =>
      withTransaction(deps.pool, async (tx) => {
        await insertReplayAction(tx, { replayId, action, actor, details });
        await signal();
      });
    try {
      if (c.command === 'pause') await audited('paused', {}, () => handle.signal(replayPauseSignal));
      else if (c.command === 'resume') await audited('resumed', {}, () => handle.signal(replayResumeSignal));
      else if (c.command === 'stop')
        await audited('stopped', c.reason ? { reason: c.reason } : {}, () =>
          handle.signal(replayStopSignal, { reason: c.reason, by: actor }),
        );
      else {
        const plan = await resolveTargets(deps.pool, deps.temporal, { ids: c.ids });
        const busy = [...Object.keys(plan.takeOver), ...plan.skipped.map((x) => x.deadLetterId)];
        // Adding to a running request stays strict: only open dead letters.
        if (busy.length > 0)
          throw new StateConflictError(`only open dead letters can be added: ${busy.join(', ')}`, {
            slug: 'dead-letter-not-open',
            title: 'Dead letter not open',
            extra: { ids: busy },
          });
        const { targets } = plan;
        await withTransaction(deps.pool, async (tx) => {
          for (const t of targets) await insertAction(tx, { deadLetterId: t.id, action: 'replay_requested', actor, details: { replayId } });
          await insertReplayAction(tx, { replayId, action: 'added', actor, details: { ids: targets.map((t) => t.id) } });
          await handle.signal(replayAddSignal, { ids: targets.map((t) => t.id) });
        });
      }
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        throw new StateConflictError(`replay ${replayId} is not running (finished or unknown)`, {
          slug: 'replay-finished',
          title: 'Replay finished',
        });
      }
      throw err;
    }
  }

  /** Discards an open dead letter with a reason; discarding twice keeps the first reason and action. */
  async function discard(
    id: string,
    reason: string,
    actor: string,
  ): Promise<{ view: ReturnType<typeof deadLetterView>; discardedNow: boolean }> {
    const outcome = await withTransaction(deps.pool, async (tx) => {
      const d = await lockDeadLetter(tx, id);
      if (!d) throw new NotFoundError(`dead letter ${id} not found`);
      if (d.state !== 'open') return d.state;
      await markDiscarded(tx, d.id, reason);
      await insertAction(tx, { deadLetterId: d.id, action: 'discarded', actor, details: { reason } });
      return 'discarded-now' as const;
    });
    if (outcome === 'replaying' || outcome === 'replayed') {
      throw new StateConflictError(`dead letter ${id} is ${outcome}; only an open dead letter can be discarded`, {
        slug: `dead-letter-${outcome}`,
      });
    }
    return { view: deadLetterView((await getDeadLetter(deps.pool, id))!), discardedNow: outcome === 'discarded-now' };
  }

  async function list(q: DeadLetterFilter) {
    return (await listDeadLetters(deps.pool, q)).map(deadLetterView);
  }

  return { list, show, replay, progress, steer, discard };
}

export type DeadLetterService = ReturnType<typeof createDeadLetterService>;
