import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { StepArgs } from '../activities/job-steps.js';
import { budgetFor } from './job-types.js';
import { stepOptions } from './lifecycle.js';

const bookkeeping = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { initialInterval: '1s', maximumInterval: '30s' } });

/**
 * An operator's replay of a failed notification (`POST /v1/admin/outbox/{id}/replay` put its
 * row back to `pending`): delivers the job's pending outbox rows once more, with their own
 * effect keys and the notification budget. Failing again ends them `failed` again, with the
 * new evidence; the job itself stays as it was.
 */
export async function redeliverOutbox(args: StepArgs): Promise<number> {
  const notify = proxyActivities<Activities>({
    ...stepOptions({ ...budgetFor(args), maximumAttempts: 10, scheduleToCloseTimeoutMs: 30 * 60_000 }),
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
