import { proxyActivities, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import type { JobBudget } from '../contract/job-types.js';

/** Activity options from a job type's budget: the lease, the attempt and elapsed caps. */
export function stepOptions(budget: JobBudget): ActivityOptions {
  return {
    startToCloseTimeout: budget.startToCloseTimeoutMs,
    heartbeatTimeout: budget.heartbeatTimeoutMs,
    scheduleToCloseTimeout: budget.scheduleToCloseTimeoutMs,
    retry: {
      // Delays come from the activity (Retry-After or full jitter via nextRetryDelay);
      // these values only apply to failures that carry none (for example a lease timeout).
      initialInterval: 1_000,
      backoffCoefficient: 2,
      maximumInterval: budget.backoffCapMs,
      maximumAttempts: budget.maximumAttempts,
      nonRetryableErrorTypes: ['NonRetryableError', 'ValidationError', 'RetryBudgetExhausted'],
    },
  };
}

/**
 * The same budget for a step run as a local activity (the fast path): no heartbeat timeout
 * (a local activity's lease is its workflow task: a worker that dies stops completing it, and
 * the server hands the task, and so the step, to another worker after the workflow-task
 * timeout). Back-offs up to `localRetryThreshold` (the SDK's 1 min) sleep in the worker, longer
 * ones on a durable timer; the attempt cap and elapsed cap are the same as on the standard path.
 */
export function localStepOptions(budget: JobBudget): LocalActivityOptions {
  const { heartbeatTimeout: _lease, ...rest } = stepOptions(budget);
  return rest;
}

/**
 * Bookkeeping activities (job state, dead letters, admission, replay steps): short, and
 * retried until Postgres is back, which is safe because each is idempotent.
 */
export const BOOKKEEPING_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
};

export const bookkeepingActivities = proxyActivities<SystemActivities>(BOOKKEEPING_OPTIONS);
