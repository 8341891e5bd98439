import { Context } from '@temporalio/activity';
import type { JobState, StepArgs } from '../contract/job-types.js';
import { setStatus } from '../store/intents.js';
import type { ActivityDeps } from './deps.js';

/** The job-state bookkeeping every job type shares. Function names are Temporal activity types. */
export function createBookkeepingActivities(deps: Pick<ActivityDeps, 'pool'>) {
  return {
    /** Records a terminal or waiting state the workflow decided (cancelled, deferred, dead-lettered). */
    async recordJobState(
      args: StepArgs & { state: JobState; reason: string | null; error?: { errorClass: string; message: string; statusCode?: number } },
    ): Promise<void> {
      Context.current().heartbeat();
      await setStatus(deps.pool, args.jobId, args.state, args.reason, args.error);
    },
  };
}
