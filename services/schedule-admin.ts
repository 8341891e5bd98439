/**
 * The scheduled job types for operators (issue 38 §8): each type's Temporal Schedule with its
 * state, pause / unpause with a reason, trigger now, backfill a bounded range, and the windows
 * with their state. Every action is audited (`schedule_actions`). The use case behind
 * `/v1/admin/schedules*` (server/routes-schedules.ts), the console's Schedules page and
 * `durable-jobs schedules`.
 */
import { ScheduleNotFoundError, type Client, type ScheduleDescription } from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import type pg from 'pg';
import { unkeyed } from '../lib/ids.js';
import { NotFoundError, ValidationError } from '../lib/errors.js';
import type { JobRegistry } from '../job-api/registry.js';
import { windowContaining, windowKey, type ScheduleWindow } from '../contract/schedule-window.js';
import { listTenantIds } from '../store/tenants.js';
import {
  insertScheduleAction,
  listScheduleActions,
  pauseActionsBefore,
  scanErrorsSince,
  windowRowsBetween,
  type ScheduleActionKind,
} from '../store/schedules.js';
import { jobScheduleDeclarations, scheduleIdFor, windowGridOf, type JobScheduleDeclaration } from './schedules.js';
import { MAX_BACKFILL_WINDOWS, MAX_LISTED_WINDOWS, type BackfillRequest, type WindowsQuery } from './schedule-admin-schemas.js';
import { pauseSpans, windowStates } from './schedule-windows.js';

export interface ScheduleAdminDeps {
  pool: pg.Pool;
  temporal: Client;
  jobTypes: Pick<JobRegistry, 'modules'>;
  /** The Schedule IDs' prefix: the task queue the API ensured them with (`ensureSchedules`). */
  prefix: string;
}

export interface Actor {
  operator: string;
  keyId: string | null;
}

const SCAN_GRACE_MS = 5 * 60_000;
const DEFAULT_LISTED_WINDOWS = 14;

export function createScheduleAdmin(deps: ScheduleAdminDeps) {
  const declarations = () => jobScheduleDeclarations(deps.jobTypes);
  const namespace = deps.temporal.options.namespace;

  function declaration(name: string): JobScheduleDeclaration {
    const d = declarations().find((x) => x.name === name);
    if (!d) throw new NotFoundError(`no scheduled job type ${name}`);
    return d;
  }
  const handle = (d: JobScheduleDeclaration) => deps.temporal.schedule.getHandle(scheduleIdFor(deps.prefix, d.name));
  async function describe(d: JobScheduleDeclaration): Promise<ScheduleDescription | null> {
    try {
      return await handle(d).describe();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return null;
      throw err;
    }
  }
  const definitionOf = (d: JobScheduleDeclaration) => deps.jobTypes.modules.find((m) => m.definition.name === d.jobType)!.definition;
  const tenantsOf = async (d: JobScheduleDeclaration) => {
    const s = definitionOf(d).schedule!;
    return s.perTenant ? listTenantIds(deps.pool) : [s.tenant!];
  };
  /** The jobs a window stands for: one per tenant, their IDs derived from the window (activities/schedules.ts). */
  const jobIdsFor = (d: JobScheduleDeclaration, w: ScheduleWindow, tenants: string[]) =>
    tenants.map((t) => unkeyed.jobIdFor(t, d.jobType, windowKey(d.jobType, w)));

  async function view(d: JobScheduleDeclaration) {
    const desc = await describe(d);
    const tenants = await tenantsOf(d);
    return {
      name: d.name,
      jobType: d.jobType,
      scheduleId: scheduleIdFor(deps.prefix, d.name),
      description: d.description,
      timing: d.timing,
      window: windowGridOf(d),
      perTenant: definitionOf(d).schedule!.perTenant,
      tenants,
      state: desc
        ? {
            exists: true,
            paused: desc.state.paused,
            ...(desc.state.note ? { note: desc.state.note } : {}),
            createdAt: desc.info.createdAt.toISOString(),
            nextActionTimes: desc.info.nextActionTimes.slice(0, 5).map((t) => t.toISOString()),
            recentActions: desc.info.recentActions
              .slice(-10)
              .reverse()
              .map((a) => ({
                scheduledAt: a.scheduledAt.toISOString(),
                takenAt: a.takenAt.toISOString(),
                workflowId: a.action.workflow.workflowId,
              })),
            actionsTaken: desc.info.numActionsTaken,
            actionsMissedCatchupWindow: desc.info.numActionsMissedCatchupWindow,
            actionsSkippedOverlap: desc.info.numActionsSkippedOverlap,
          }
        : { exists: false },
    };
  }

  async function audit(d: JobScheduleDeclaration, action: ScheduleActionKind, who: Actor, reason: string | null, details = {}) {
    await insertScheduleAction(deps.pool, {
      job_type: d.jobType,
      schedule_id: scheduleIdFor(deps.prefix, d.name),
      action,
      actor: who.operator,
      key_id: who.keyId,
      reason,
      details,
    });
  }
  async function existing(d: JobScheduleDeclaration) {
    if (!(await describe(d))) throw new NotFoundError(`the Schedule of ${d.name} does not exist (yet): the API creates it at start`);
    return handle(d);
  }

  /** The times the Schedule's spec matched in [from, to): Temporal computes cron and time zones. */
  async function matchingTimes(d: JobScheduleDeclaration, from: number, to: number): Promise<number[]> {
    const res = await deps.temporal.workflowService.listScheduleMatchingTimes({
      namespace,
      scheduleId: scheduleIdFor(deps.prefix, d.name),
      startTime: msToTs(from),
      endTime: msToTs(to),
    });
    return (res.startTime ?? []).map((t) => tsToMs(t));
  }

  return {
    async list() {
      return { items: await Promise.all(declarations().map(view)) };
    },

    async show(name: string) {
      const d = declaration(name);
      const actions = await listScheduleActions(deps.pool, d.jobType, 50);
      return {
        ...(await view(d)),
        actions: actions.map((a) => ({
          at: a.at.toISOString(),
          action: a.action,
          actor: a.actor,
          ...(a.reason ? { reason: a.reason } : {}),
          details: a.details,
        })),
      };
    },

    async pause(name: string, who: Actor, reason: string) {
      const d = declaration(name);
      await (await existing(d)).pause(`paused by ${who.operator}: ${reason}`);
      await audit(d, 'paused', who, reason);
      return view(d);
    },

    async unpause(name: string, who: Actor, reason: string) {
      const d = declaration(name);
      await (await existing(d)).unpause(`unpaused by ${who.operator}: ${reason}`);
      await audit(d, 'unpaused', who, reason);
      return view(d);
    },

    /** Fires the Schedule now: the window containing now gets its jobs (or finds them, if it has them). */
    async trigger(name: string, who: Actor, reason: string | null) {
      const d = declaration(name);
      const h = await existing(d);
      const window = windowContaining(Date.now(), windowGridOf(d));
      await h.trigger();
      await audit(d, 'triggered', who, reason, { window });
      return { scheduleId: h.scheduleId, window, jobIds: jobIdsFor(d, window, await tenantsOf(d)) };
    },

    /** Temporal starts the trigger of every time the spec matches in [from, to); at most MAX_BACKFILL_WINDOWS windows. */
    async backfill(name: string, who: Actor, r: BackfillRequest) {
      const d = declaration(name);
      const { from, to } = backfillRange(d, r);
      const h = await existing(d);
      const windows = uniqueWindows(d, await matchingTimes(d, from.getTime(), to.getTime()));
      if (windows.length === 0)
        throw new ValidationError('invalid backfill', [{ path: 'to', message: `the Schedule fires at no time in [from, to)` }]);
      await h.backfill({ start: from, end: to, overlap: 'ALLOW_ALL' });
      await audit(d, 'backfilled', who, r.reason ?? null, { from: from.toISOString(), to: to.toISOString(), windows: windows.length });
      const tenants = await tenantsOf(d);
      return { scheduleId: h.scheduleId, windows: windows.map((w) => ({ ...w, jobIds: jobIdsFor(d, w, tenants) })) };
    },

    /** The windows in [from, to) (default: the last 14 of the grid), newest first, with their state. */
    async windows(name: string, q: WindowsQuery) {
      const d = declaration(name);
      const { windowMs } = windowGridOf(d);
      const now = Date.now();
      const to = q.to ? Date.parse(q.to) : now;
      const from = q.from ? Date.parse(q.from) : to - DEFAULT_LISTED_WINDOWS * windowMs;
      if (from >= to) throw new ValidationError('invalid window range', [{ path: 'from', message: 'must be before to' }]);
      if ((to - from) / windowMs > MAX_LISTED_WINDOWS)
        throw new ValidationError('invalid window range', [
          { path: 'from', message: `the range covers more than ${MAX_LISTED_WINDOWS} windows of ${windowMs / 1000} s; narrow it` },
        ]);
      const desc = await describe(d);
      const fired = desc ? await matchingTimes(d, from, Math.min(to, now)) : [];
      const lookback = d.fillLookbackMs ?? 7 * 86_400_000;
      const windows = windowStates({
        expected: fired.map((t) => ({ ...windowContaining(t, windowGridOf(d)), firedAt: t })),
        rows: await windowRowsBetween(deps.pool, d.jobType, new Date(from - windowMs), new Date(to)),
        now,
        scheduleCreatedAt: desc ? desc.info.createdAt.getTime() : null,
        fillLookbackMs: lookback,
        graceMs: SCAN_GRACE_MS,
        scanErrors: await scanErrorsSince(deps.pool, new Date(from)),
        pauses: pauseSpans(await pauseActionsBefore(deps.pool, d.jobType, scheduleIdFor(deps.prefix, d.name), new Date(to))),
      });
      return { name: d.name, from: new Date(from).toISOString(), to: new Date(to).toISOString(), windows };
    },
  };
}

function uniqueWindows(d: JobScheduleDeclaration, times: number[]): ScheduleWindow[] {
  const byStart = new Map(times.map((t) => windowContaining(t, windowGridOf(d))).map((w) => [w.start, w]));
  return [...byStart.values()];
}

/** A backfill's range: in the past, from before to, at most MAX_BACKFILL_WINDOWS windows of the type's grid. */
function backfillRange(d: JobScheduleDeclaration, r: BackfillRequest): { from: Date; to: Date } {
  const from = new Date(r.from);
  const to = new Date(r.to);
  const bad = (path: string, message: string): never => {
    throw new ValidationError('invalid backfill', [{ path, message }]);
  };
  if (from >= to) bad('from', 'must be before to');
  if (to.getTime() > Date.now()) bad('to', 'must not be in the future: a backfill runs windows that have passed');
  const { windowMs } = windowGridOf(d);
  if ((to.getTime() - from.getTime()) / windowMs > MAX_BACKFILL_WINDOWS)
    bad(
      'to',
      `the range covers more than ${MAX_BACKFILL_WINDOWS} windows of ${windowMs / 1000} s (at most ${MAX_BACKFILL_WINDOWS} per backfill)`,
    );
  return { from, to };
}

export type ScheduleAdmin = ReturnType<typeof createScheduleAdmin>;
