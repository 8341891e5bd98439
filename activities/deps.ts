import type pg from 'pg';
import type { ConcurrencyLimits, JobBudgets, JobType } from '../contract/job-types.js';
import type { JobRegistry } from '../job-api/registry.js';
import type { Logger } from '../lib/logger.js';
import type { Provider } from './provider.js';

/** What every activity may use: the worker wires these once (`workers/worker.ts`). */
export interface ActivityDeps {
  pool: pg.Pool;
  provider: Provider;
  /** Optional second upstream (`PROVIDER_FALLBACK_URL`): called only by an operator's recorded decision. */
  fallbackProvider?: Provider | undefined;
  log: Logger;
  codeVersion: string;
  /** The job types this worker runs. */
  jobs: JobRegistry;
  /** Caps on concurrent upstream calls per job type (config `CONCURRENCY_LIMITS` over each type's defaults). */
  limits: Record<JobType, ConcurrencyLimits>;
  /** Budget overrides (`JOB_BUDGETS`) for jobs that schedules and the scan start. */
  jobBudgets?: JobBudgets | undefined;
}
