import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
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
 * Bookkeeping activities (job state, dead letters, admission, replay steps): short, and
 * retried until Postgres is back, which is safe because each is idempotent.
 */
export const BOOKKEEPING_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
};

export const bookkeepingActivities = proxyActivities<SystemActivities>(BOOKKEEPING_OPTIONS);
