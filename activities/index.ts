import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { createAdmissionActivities } from './admission.js';
import { withLeaseTracking } from './lease-tracking.js';
import { createDeadLetterActivities } from './dead-letters.js';
import { createJobActivities } from './jobs.js';
import { createScanActivities } from './scan.js';
import { createScheduleActivities } from './schedules.js';
import { createTranscribeActivities } from './transcribe.js';
import type { Provider } from './provider.js';
import type { JobBudgets } from '../client/start-job-workflow.js';
import type { ConcurrencyLimits, JobType } from '../workflows/job-types.js';

export interface ActivityDeps {
  pool: pg.Pool;
  provider: Provider;
  /** Optional second upstream (`PROVIDER_FALLBACK_URL`): called only by an operator's recorded decision. */
  fallbackProvider?: Provider | undefined;
  log: Logger;
  codeVersion: string;
  limits: Record<JobType, ConcurrencyLimits>;
  /** Budget overrides (`JOB_BUDGETS`) for jobs that schedules and the scan start. */
  jobBudgets?: JobBudgets | undefined;
}

/** All activities, wired with explicit dependencies. */
export function createActivities(deps: ActivityDeps) {
  // Lease tracking wraps every activity; it only records the leased (heartbeating) ones.
  return withLeaseTracking(deps, { ...createJobActivities(deps), ...createTranscribeActivities(deps), ...createDeadLetterActivities(deps),
    ...createScheduleActivities(deps), ...createScanActivities(deps), ...createAdmissionActivities(deps) });
}

export type Activities = ReturnType<typeof createActivities>;
