import { AsyncLocalStorage } from 'node:async_hooks';
import { CancelledFailure, Context } from '@temporalio/activity';
import { recordLostAttempt } from '../store/attempts.js';
import { flagLeaseExpired, leaseEnded, leaseStarted, type LeaseKey } from '../store/activity-leases.js';
import type { AdmissionDeps } from './admission.js';
import type { StepArgs } from '../contract/job-types.js';

/**
 * The lease of the attempt running now, for a job step that records its lease rows in its
 * own transactions (activities/job-steps.ts) instead of in commits of their own: it sets
 * `started` when its first transaction wrote the lease row, `ended` when its last one closed it.
 */
export interface LeaseScope {
  key: LeaseKey;
  activityType: string;
  startToCloseMs: number;
  started: boolean;
  ended: boolean;
}

const leaseScope = new AsyncLocalStorage<LeaseScope>();

/** The lease a job step may record itself; undefined outside a tracked job-step activity. */
export function currentLease(): LeaseScope | undefined {
  return leaseScope.getStore();
}

/**
 * Lease tracking for every leased (heartbeating) activity: a row when an attempt starts and
 * its end when it ends. When attempt N starts and attempt N-1 has no end, N-1 lost its
 * lease (its worker died, or a heartbeat or start-to-close timeout fired): N flags it,
 * keeping N-1's last heartbeat details as evidence. Recording is best-effort: evidence,
 * never control flow, so a failed write does not fail the attempt.
 *
 * `stepActivities` (the job types' activities, which all run through `runStep`) write their
 * lease row in the step's first transaction, before any other write of the attempt, which is
 * all the fence needs (store/fence.ts): two commits fewer per attempt. Should one not do it
 * (an activity that bypasses `runStep`), the row is still written here afterwards, as evidence.
 */
export function withLeaseTracking<T extends object>(
  deps: AdmissionDeps,
  activities: T,
  stepActivities: ReadonlySet<string> = new Set(),
): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    if (typeof fn !== 'function') {
      wrapped[name] = fn;
      continue;
    }
    const deferStart = stepActivities.has(name);
    wrapped[name] = async (...args: unknown[]) => {
      let info: ReturnType<typeof Context.current>['info'];
      try {
        info = Context.current().info;
      } catch {
        return fn(...args); // called outside an activity (a unit test): nothing to track
      }
      if (!info.heartbeatTimeoutMs || !info.workflowExecution) return fn(...args);
      const key: LeaseKey = {
        jobId: info.workflowExecution.workflowId,
        runId: info.workflowExecution.runId,
        activityId: info.activityId,
        attempt: info.attempt,
      };
      const scope: LeaseScope = {
        key,
        activityType: info.activityType,
        startToCloseMs: info.startToCloseTimeoutMs,
        started: false,
        ended: false,
      };
      const start = () =>
        bestEffort(deps, key, () =>
          leaseStarted(deps.pool, { ...key, activityType: info.activityType, startToCloseMs: info.startToCloseTimeoutMs }),
        );
      if (!deferStart) {
        await start();
        scope.started = true;
      }
      if (info.attempt > 1) {
        const lost = await bestEffort(deps, key, () =>
          flagLeaseExpired(deps.pool, { ...key, attempt: info.attempt - 1 }, info.heartbeatDetails),
        );
        if (lost?.flagged) {
          deps.log.warn(
            { jobId: key.jobId, activityType: info.activityType, attempt: info.attempt - 1 },
            'previous attempt lost its lease (no outcome recorded)',
          );
          // A job step's lost attempt also goes into job_attempts: counting attempts there must count it.
          const hb = (info.heartbeatDetails as { step?: unknown } | undefined)?.step;
          const step = typeof hb === 'string' ? hb : undefined;
          await bestEffort(deps, key, () =>
            recordLostAttempt(deps.pool, { ...key, attempt: info.attempt - 1 }, step, attemptOffsetOf(args[0])),
          );
        }
      }
      const end = async (outcome: 'completed' | 'failed' | 'cancelled' | 'lease_expired') => {
        if (!scope.started) await start();
        if (!scope.ended) await bestEffort(deps, key, () => leaseEnded(deps.pool, key, outcome));
      };
      try {
        const result = await leaseScope.run(scope, () => fn(...args));
        await end('completed');
        return result;
      } catch (err) {
        // Temporal timed out this attempt's heartbeat (a slow or cut-off worker that lives on):
        // it lost its lease as surely as a dead worker's, and the next attempt, starting after
        // this end, would find nothing to flag. So it records the loss itself (once per attempt).
        const d = Context.current().cancellationDetails;
        if (d?.timedOut || d?.notFound) {
          await end('lease_expired');
          await bestEffort(deps, key, () => recordLostAttempt(deps.pool, key, undefined, attemptOffsetOf(args[0])));
          deps.log.warn(
            { jobId: key.jobId, activityType: info.activityType, attempt: key.attempt },
            'attempt lost its lease (heartbeat timed out)',
          );
        } else await end(err instanceof CancelledFailure ? 'cancelled' : 'failed');
        throw err;
      }
    };
  }
  return wrapped as T;
}

/** A job step's attempts before this schedule (`SlotWaitArgs`), from its arguments; 0 for any other activity. */
function attemptOffsetOf(arg: unknown): number {
  const offset = (arg as Partial<StepArgs> | undefined)?.slotWait?.attemptOffset;
  return typeof offset === 'number' ? offset : 0;
}

async function bestEffort<R>(deps: AdmissionDeps, key: LeaseKey, write: () => Promise<R>): Promise<R | undefined> {
  try {
    return await write();
  } catch (err) {
    deps.log.warn({ jobId: key.jobId, err: (err as Error).message }, 'could not record lease evidence');
    return undefined;
  }
}
