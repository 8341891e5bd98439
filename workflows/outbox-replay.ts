import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import { DEFAULT_BUDGET, type StepArgs } from '../contract/job-types.js';
import { bookkeepingActivities as bookkeeping, stepOptions } from './activity-options.js';

/**
 * An operator's replay of a failed notification (`POST /v1/admin/outbox/{id}/replay` put its
 * row back to `pending`): delivers the job's pending outbox rows once more, with their own
 * effect keys and the notification budget. Failing again ends them `failed` again, with the
 * new evidence; the job itself stays as it was.
 */
export async function redeliverOutbox(args: StepArgs): Promise<number> {
  // The workflow cannot read the registry: the default budget with the job's own overrides,
  // then the notification's attempt and elapsed caps (as every job type's notify step).
  const notify = proxyActivities<SystemActivities>({
    ...stepOptions({ ...DEFAULT_BUDGET, ...args.budget, maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 }),
    summary: 'operator replay: deliver the failed notification again',
  });
  try {
    return await notify.deliverOutbox(args);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    await bookkeeping.markNotificationFailed(args);
    return 0;
  }
}
