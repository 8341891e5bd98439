import { CancelledFailure, Context } from '@temporalio/activity';
import { recordLostAttempt } from '../store/attempts.js';
import { flagLeaseExpired, leaseEnded, leaseStarted, type LeaseKey } from '../store/activity-leases.js';
import type { AdmissionDeps } from './admission.js';

/**
 * Lease tracking for every leased (heartbeating) activity: a row when an attempt starts and
 * its end when it ends. When attempt N starts and attempt N-1 has no end, N-1 lost its
 * lease (its worker died, or a heartbeat or start-to-close timeout fired): N flags it,
 * keeping N-1's last heartbeat details as evidence. Recording is best-effort: evidence,
 * never control flow, so a failed write does not fail the attempt.
 */
export function withLeaseTracking<T extends object>(deps: AdmissionDeps, activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    if (typeof fn !== 'function') {
      wrapped[name] = fn;
      continue;
    }
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
      await bestEffort(deps, key, () =>
        leaseStarted(deps.pool, { ...key, activityType: info.activityType, startToCloseMs: info.startToCloseTimeoutMs }),
      );
      if (info.attempt > 1) {
        const flagged = await bestEffort(deps, key, () =>
          flagLeaseExpired(deps.pool, { ...key, attempt: info.attempt - 1 }, info.heartbeatDetails),
        );
        if (flagged) {
          deps.log.warn(
            { jobId: key.jobId, activityType: info.activityType, attempt: info.attempt - 1 },
            'previous attempt lost its lease (no outcome recorded)',
          );
          // A job step's lost attempt also goes into job_attempts: counting attempts there must count it.
          const step = (info.heartbeatDetails as { step?: unknown } | undefined)?.step;
          if (typeof step === 'string')
            await bestEffort(deps, key, () => recordLostAttempt(deps.pool, { ...key, attempt: info.attempt - 1 }, step));
        }
      }
      try {
        const result = await fn(...args);
        await bestEffort(deps, key, () => leaseEnded(deps.pool, key, 'completed'));
        return result;
      } catch (err) {
        await bestEffort(deps, key, () => leaseEnded(deps.pool, key, err instanceof CancelledFailure ? 'cancelled' : 'failed'));
        throw err;
      }
    };
  }
  return wrapped as T;
}

async function bestEffort<R>(deps: AdmissionDeps, key: LeaseKey, write: () => Promise<R>): Promise<R | undefined> {
  try {
    return await write();
  } catch (err) {
    deps.log.warn({ jobId: key.jobId, err: (err as Error).message }, 'could not record lease evidence');
    return undefined;
  }
}
