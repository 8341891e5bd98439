/**
 * Bulk actions (issue 38 §3, §7), the use case behind `/v1/admin/bulk-actions*`, the client's
 * `createBulkActionsAdmin` and `durable-jobs bulk`: resolve a filter or IDs to targets within a
 * stated limit, preview them (`dryRun`), start one `bulkAction` workflow per request (the row and
 * the start commit together), steer it (pause, resume, stop: each an audited command), read its
 * progress. `replay` of dead letters goes to the dead-letter replay, which is that mechanism
 * already. Also a single rerun. HTTP-free: errors are the coded classes.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import { bulkPauseSignal, bulkProgressQuery, bulkResumeSignal, bulkStopSignal, type BulkProgress } from '../contract/bulk-actions.js';
import { TERMINAL_STATES, UNFINISHED_STATES, type JobState } from '../contract/job-types.js';
import type { JobRegistry } from '../job-api/registry.js';
import { pgOr503, UNAVAILABLE_RETRY_AFTER_SECONDS, withTransaction } from '../lib/db.js';
import { NotFoundError, StateConflictError, UnavailableError, ValidationError, type FieldIssue } from '../lib/errors.js';
import {
  bulkCommandsFor,
  bulkItems,
  getBulkAction,
  insertBulkAction,
  insertBulkCommand,
  listBulkActions,
  refreshBulkAction,
  type BulkActionRow,
} from '../store/bulk-actions.js';
import { listDeadLetters } from '../store/dead-letters.js';
import { getIntent } from '../store/intents.js';
import { zodFieldIssues } from '../lib/validation.js';
import { pageIntents } from '../store/job-pages.js';
import type { bulkAction } from '../workflows/bulk-action.js';
import {
  BULK_REQUEST,
  DEAD_LETTER_FILTER_KEYS,
  DEFAULT_BULK_LIMIT,
  JOB_FILTER_KEYS,
  MAX_BULK_LIMIT,
  type BulkFilter,
  type BulkRequest,
} from './bulk-action-schemas.js';
import { createDeadLetterService, refuseUnknownTypes, type DeadLetterService } from './dead-letters.js';
import { deadLettersOf, listClusters, type ClusterQuery } from './failure-clusters.js';
import { ADMIN_LIST_QUERY, parseListQuery } from './job-lists.js';
import { planRerun, startRerun, type RerunDeps } from './reruns.js';

export { BULK_REQUEST, CLUSTER_QUERY, RERUN_REQUEST, STOP_REQUEST } from './bulk-action-schemas.js';

/** The job states each job action applies to: its default filter, and all a filter may name. */
const ACTION_STATES: Record<'cancel' | 'rerun' | 'retry-now', readonly JobState[]> = {
  cancel: UNFINISHED_STATES,
  rerun: TERMINAL_STATES,
  'retry-now': ['retrying'],
};

/** One target as the preview lists it. */
export interface BulkTarget {
  id: string;
  jobId: string;
  tenantId: string;
  jobType: string;
  /** The job's state, or the dead letter's. */
  state: string;
}

const PREVIEW_ITEMS = 100;
const PREVIEW_RERUN_PLANS = 20;

const outOfBounds = (path: string, message: string, extra: Record<string, unknown> = {}) =>
  new StateConflictError(message, {
    status: 422,
    slug: 'bulk-target-count',
    title: 'Bulk action matches nothing or more than its limit',
    extra: { errors: [{ path, message } satisfies FieldIssue], ...extra },
  });

const invalid = (path: string, message: string) => new ValidationError('invalid bulk action', [{ path, message }]);

/** Refuses filter keys that do not apply to the action's kind of target, naming each. */
function onlyKeys(filter: BulkFilter, allowed: readonly string[], what: string): void {
  const bad = Object.keys(filter).filter((k) => !allowed.includes(k));
  if (bad.length > 0)
    throw new ValidationError(
      'invalid bulk action',
      bad.map((k) => ({ path: `filter.${k}`, message: `not a filter of ${what}; allowed: ${allowed.join(', ')}` })),
    );
}

export interface BulkActionServiceDeps extends RerunDeps {
  jobs: JobRegistry;
  deadLetters: DeadLetterService;
}

export function createBulkActionService(deps: BulkActionServiceDeps) {
  /** Jobs matching the filter or named by ID, at most `limit` (more: 422 naming the field). */
  async function jobTargets(b: BulkRequest & { action: 'cancel' | 'rerun' | 'retry-now' }, limit: number): Promise<BulkTarget[]> {
    const allowedStates = ACTION_STATES[b.action];
    if (b.ids) {
      const rows = [];
      for (const id of new Set(b.ids)) {
        const row = await pgOr503(() => getIntent(deps.pool, id));
        if (!row) throw new NotFoundError(`no job ${id}`);
        rows.push(row);
      }
      return rows.map((r) => ({ id: r.job_id, jobId: r.job_id, tenantId: r.tenant_id, jobType: r.job_type, state: r.status }));
    }
    const f = b.filter!;
    onlyKeys(f, JOB_FILTER_KEYS, 'jobs');
    let q;
    try {
      q = parseListQuery(ADMIN_LIST_QUERY, { ...f, limit: 1 });
    } catch (err) {
      if (err instanceof ValidationError)
        throw new ValidationError(
          'invalid bulk action',
          err.fields.map((i) => ({ ...i, path: `filter.${i.path}` })),
        );
      throw err;
    }
    if (q.type !== undefined && !deps.jobs.get(q.type)) throw invalid('filter.type', `must be one of: ${deps.jobs.names.join(', ')}`);
    const states = q.state ?? allowedStates;
    const wrong = states.filter((s) => !allowedStates.includes(s));
    if (wrong.length > 0)
      throw invalid('filter.state', `${b.action} applies to jobs in ${allowedStates.join(', ')}; not ${wrong.join(', ')}`);
    const page = await pgOr503(() =>
      pageIntents(deps.pool, {
        tenantId: q.tenantId,
        jobType: q.type,
        states,
        createdAfter: q.createdAfter,
        createdBefore: q.createdBefore,
        tag: q.tag,
        limit,
      }),
    );
    if (page.next)
      throw outOfBounds(
        'filter',
        `the filter matches more than the limit of ${limit} jobs: narrow it, or raise limit (at most ${MAX_BULK_LIMIT})`,
      );
    return page.rows.map((r) => ({ id: r.job_id, jobId: r.job_id, tenantId: r.tenant_id, jobType: r.job_type, state: r.status }));
  }

  /** Open dead letters matching the filter (a cluster, a signature, type, tenant, error class) or named by ID. */
  async function deadLetterTargets(b: BulkRequest, limit: number): Promise<BulkTarget[]> {
    if (b.ids) {
      const ids = [...new Set(b.ids)];
      const rows = await pgOr503(() => listDeadLetters(deps.pool, { ids, limit: ids.length }));
      const missing = ids.filter((id) => !rows.some((r) => r.id === id));
      if (missing.length > 0) throw new NotFoundError(`no dead letter ${missing.slice(0, 10).join(', ')}`);
      return rows.map((r) => ({ id: r.id, jobId: r.job_id, tenantId: r.tenant_id, jobType: r.job_type, state: r.state }));
    }
    const f = b.filter!;
    onlyKeys(f, DEAD_LETTER_FILTER_KEYS, 'dead letters');
    const rows = (
      await deadLettersOf(deps.pool, {
        ...(f.cluster ? { cluster: f.cluster } : {}),
        ...(f.signature ? { signature: f.signature } : {}),
        ...(f.tenantId ? { tenantId: f.tenantId } : {}),
        ...(f.type ? { jobType: f.type } : {}),
      })
    ).filter((r) => f.errorClass === undefined || r.error_class === f.errorClass);
    if (rows.length > limit)
      throw outOfBounds(
        'filter',
        `the filter matches ${rows.length} dead letters, more than the limit of ${limit}: narrow it, or raise limit (at most ${MAX_BULK_LIMIT})`,
      );
    return rows.map((r) => ({ id: r.id, jobId: r.job_id, tenantId: r.tenant_id, jobType: r.job_type, state: r.state }));
  }

  async function resolve(b: BulkRequest): Promise<{ targets: BulkTarget[]; limit: number }> {
    const limit = b.limit ?? DEFAULT_BULK_LIMIT;
    if (b.ids && b.ids.length > limit) throw outOfBounds('ids', `${b.ids.length} IDs, more than the limit of ${limit}`);
    if (b.fromStep !== undefined && b.action !== 'rerun') throw invalid('fromStep', 'only a rerun starts from a step');
    const targets =
      b.action === 'discard' || b.action === 'replay'
        ? await deadLetterTargets(b, limit)
        : await jobTargets({ ...b, action: b.action }, limit);
    if (targets.length === 0)
      throw outOfBounds(b.ids ? 'ids' : 'filter', `the ${b.ids ? 'IDs name' : 'filter matches'} nothing to ${b.action}`);
    if (b.action === 'rerun' || b.action === 'replay')
      refuseUnknownTypes(
        deps.jobs,
        targets.map((t) => ({ id: t.id, job_type: t.jobType })),
      );
    if (b.fromStep !== undefined && new Set(targets.map((t) => t.jobType)).size > 1)
      throw invalid('fromStep', 'a rerun from a step needs jobs of one type (steps are named per type): filter by type');
    return { targets, limit };
  }

  /** The preview: what would be touched, how many, per tenant and type; for a rerun, each effect's fate (the first jobs). */
  async function preview(b: BulkRequest, targets: BulkTarget[], limit: number) {
    const groups = new Map<string, { tenantId: string; jobType: string; count: number }>();
    for (const t of targets) {
      const k = `${t.tenantId}\u0000${t.jobType}`;
      const g = groups.get(k) ?? { tenantId: t.tenantId, jobType: t.jobType, count: 0 };
      g.count++;
      groups.set(k, g);
    }
    const reruns =
      b.action === 'rerun'
        ? await Promise.all(
            targets
              .slice(0, PREVIEW_RERUN_PLANS)
              .map((t) =>
                planRerun(deps.pool, deps.jobs, t.jobId, b.fromStep).catch((err: Error) => ({ jobId: t.jobId, refused: err.message })),
              ),
          )
        : undefined;
    return {
      dryRun: true as const,
      action: b.action,
      count: targets.length,
      limit,
      groups: [...groups.values()],
      targets: targets.slice(0, PREVIEW_ITEMS),
      ...(reruns ? { reruns } : {}),
    };
  }

  /** `raw`: the request as received (HTTP body or the client's argument); a bad one is a 400 naming each field. */
  async function request(raw: unknown, actor: string) {
    const parsed = BULK_REQUEST.safeParse(raw);
    if (!parsed.success) throw new ValidationError('invalid bulk action', zodFieldIssues(parsed.error));
    const b = parsed.data;
    const { targets, limit } = await resolve(b);
    if (b.action === 'replay') {
      // The dead-letter replay is the bulk mechanism for dead letters already (its preview says which effects are reused).
      const { action: _a, filter: _f, limit: _l, reason: _r, fromStep: _s, ids: _i, ...options } = b;
      const r = await deps.deadLetters.replay({ ...options, ids: targets.map((t) => t.id) }, actor);
      return r.dryRun
        ? { ...r, action: 'replay' as const, limit }
        : { ...r, action: 'replay' as const, statusUrl: `/v1/dead-letters/replays/${r.replayId}` };
    }
    if (b.dryRun) return preview(b, targets, limit);
    const bulkId = `bulk-${randomUUID()}`;
    const options = {
      ...(b.batchSize ? { batchSize: b.batchSize } : {}),
      ...(b.concurrency ? { concurrency: b.concurrency } : {}),
      ...(b.ratePerMinute ? { ratePerMinute: b.ratePerMinute } : {}),
      ...(b.reason ? { reason: b.reason } : {}),
      ...(b.fromStep ? { fromStep: b.fromStep } : {}),
    };
    // The row and the start commit together: a failed start leaves no action that never ran.
    await withTransaction(deps.pool, async (tx) => {
      await insertBulkAction(tx, {
        id: bulkId,
        action: b.action,
        requestedBy: actor,
        selector: b.ids ? { ids: b.ids } : { filter: b.filter, limit },
        options,
        total: targets.length,
      });
      try {
        await deps.temporal.workflow.start<typeof bulkAction>('bulkAction', {
          taskQueue: deps.taskQueue,
          workflowId: bulkId,
          args: [{ bulkId, action: b.action as 'cancel', requestedBy: actor, targets: targets.map((t) => t.id), ...options }],
          staticSummary: `bulk ${b.action} of ${targets.length} ${b.action === 'discard' ? 'dead letter(s)' : 'job(s)'}, requested by ${actor}`,
        });
      } catch (err) {
        throw new UnavailableError('Temporal cannot start the bulk action right now', UNAVAILABLE_RETRY_AFTER_SECONDS, {
          dependency: 'temporal',
          cause: err,
        });
      }
    });
    return { dryRun: false as const, bulkId, action: b.action, count: targets.length, statusUrl: `/v1/admin/bulk-actions/${bulkId}` };
  }

  const rowView = (r: BulkActionRow) => ({
    bulkId: r.id,
    action: r.action,
    requestedBy: r.requested_by,
    selector: r.selector,
    options: r.options,
    state: r.state,
    counts: { total: r.total, done: r.done, applied: r.applied, skipped: r.skipped, failed: r.failed },
    ...(r.stop_reason ? { stopReason: r.stop_reason } : {}),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
  });

  async function list(limit = 50) {
    return (await pgOr503(() => listBulkActions(deps.pool, limit))).map(rowView);
  }

  /** The row, the live progress while the workflow runs, the commands and the first items' audit rows. */
  async function show(bulkId: string, o: { items?: number } = {}) {
    const row = await pgOr503(() => getBulkAction(deps.pool, bulkId));
    if (!row) throw new NotFoundError(`bulk action ${bulkId} not found`);
    let live: BulkProgress | undefined;
    if (!row.finished_at)
      live = await deps.temporal.workflow
        .getHandle(bulkId)
        .query(bulkProgressQuery)
        .catch(() => undefined);
    const [commands, items] = await Promise.all([bulkCommandsFor(deps.pool, bulkId), bulkItems(deps.pool, bulkId, o.items ?? 200)]);
    const view = rowView(row);
    return {
      ...view,
      ...(live
        ? {
            state: live.state,
            // The workflow's own counts: the row's are refreshed after each batch and at the end,
            // so a read between a batch's end and that refresh would pair a live state with old counts.
            counts: {
              total: live.counts.total,
              done: live.counts.applied + live.counts.skipped + live.counts.failed,
              applied: live.counts.applied,
              skipped: live.counts.skipped,
              failed: live.counts.failed,
            },
            progress: { ...live.counts, peakRunning: live.peakRunning, batchesStarted: live.batchesStarted },
            options: { ...view.options, ...live.options },
          }
        : {}),
      commands: commands.map((c) => ({ command: c.command, actor: c.actor, at: c.at.toISOString(), details: c.details })),
      items: items.map((i) => ({
        targetId: i.target_id,
        outcome: i.outcome,
        actor: i.actor,
        detail: i.detail,
        grantedAt: i.granted_at.toISOString(),
        at: i.at.toISOString(),
      })),
    };
  }

  /** pause / resume / stop: the audit row, the row's state and the signal commit together (a refused signal leaves none). */
  async function steer(bulkId: string, c: { command: 'pause' | 'resume' | 'stop'; reason?: string }, actor: string): Promise<void> {
    const row = await pgOr503(() => getBulkAction(deps.pool, bulkId));
    if (!row) throw new NotFoundError(`bulk action ${bulkId} not found`);
    const finished = () =>
      new StateConflictError(`bulk action ${bulkId} is over (${row.state})`, {
        slug: 'bulk-action-finished',
        title: 'Bulk action finished',
      });
    if (row.finished_at) throw finished();
    const handle = deps.temporal.workflow.getHandle(bulkId);
    const command = c.command === 'pause' ? 'paused' : c.command === 'resume' ? 'resumed' : 'stopped';
    const state = c.command === 'pause' ? 'paused' : c.command === 'resume' ? 'running' : 'stopping';
    try {
      await withTransaction(deps.pool, async (tx) => {
        await insertBulkCommand(tx, { bulkId, command, actor, details: c.reason ? { reason: c.reason } : {} });
        await refreshBulkAction(tx, bulkId, { state, ...(c.command === 'stop' ? { stopReason: c.reason ?? `stopped by ${actor}` } : {}) });
        if (c.command === 'pause') await handle.signal(bulkPauseSignal);
        else if (c.command === 'resume') await handle.signal(bulkResumeSignal);
        else await handle.signal(bulkStopSignal, { reason: c.reason, by: actor });
      });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw finished();
      throw err;
    }
  }

  /** One rerun (or its preview): a job still running is refused (409), an unknown step named (400 `fromStep`). */
  async function rerun(jobId: string, o: { fromStep?: string; dryRun?: boolean }, actor: string) {
    if (o.dryRun) return { dryRun: true as const, ...(await planRerun(deps.pool, deps.jobs, jobId, o.fromStep)) };
    const plan = await startRerun(deps, jobId, { actor, ...(o.fromStep !== undefined ? { fromStep: o.fromStep } : {}) });
    return { dryRun: false as const, requestedBy: actor, ...plan };
  }

  return { request, list, show, steer, rerun };
}

export type BulkActionService = ReturnType<typeof createBulkActionService>;

export interface BulkActionsAdminOptions {
  pool: pg.Pool;
  temporal: Client;
  /** The jobs task queue: bulk-action workflows and reruns run there. */
  taskQueue: string;
  /** The registered job types. Default: the caller passes `defaultJobRegistry` (client/index.ts). */
  jobs: JobRegistry;
  /** Named in every audit row this client writes. Default `client`. */
  actor?: string;
  /** Compared with a dead letter's recorded version in replay previews. Default `client`. */
  codeVersion?: string;
}

/**
 * The operators' face in backend code (`durable-jobs/client`): the same service the HTTP API
 * and `durable-jobs bulk` use, with the caller's pool and Temporal client.
 */
export function createBulkActionsAdmin(o: BulkActionsAdminOptions) {
  const actor = o.actor ?? 'client';
  const deadLetters = createDeadLetterService({
    pool: o.pool,
    temporal: o.temporal,
    jobTypes: o.jobs,
    taskQueue: o.taskQueue,
    codeVersion: o.codeVersion ?? 'client',
  });
  const s = createBulkActionService({ pool: o.pool, temporal: o.temporal, jobs: o.jobs, taskQueue: o.taskQueue, deadLetters });
  return {
    /** Starts a bulk action, or previews it (`dryRun: true`). A filter matching nothing or more than `limit` is refused (StateConflictError, 422). */
    request: (body: BulkRequest) => s.request(body, actor),
    list: (limit?: number) => s.list(limit),
    show: (bulkId: string) => s.show(bulkId),
    pause: (bulkId: string) => s.steer(bulkId, { command: 'pause' }, actor),
    resume: (bulkId: string) => s.steer(bulkId, { command: 'resume' }, actor),
    stop: (bulkId: string, reason?: string) => s.steer(bulkId, { command: 'stop', ...(reason ? { reason } : {}) }, actor),
    /** Reruns a finished job as a new linked job (`fromStep`: reuse the effects before it); `dryRun` previews. */
    rerun: (jobId: string, opts: { fromStep?: string; dryRun?: boolean } = {}) => s.rerun(jobId, opts, actor),
    /** Open dead letters grouped by failure cluster (services/failure-clusters.ts). */
    clusters: (q: ClusterQuery = {}) => listClusters(o.pool, q),
  };
}
export type BulkActionsAdmin = ReturnType<typeof createBulkActionsAdmin>;
