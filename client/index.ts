/**
 * `durable-jobs/client`: the typed client for backend code. It submits jobs (at once or
 * delayed), reads their status, lists them and cancels them over your own Temporal `Client` and `pg` Pool; a worker (this
 * repository's `npm run worker`, or your own) runs them. Run `migrate(pool)` once before the
 * first submit: the client reads and writes the same tables the workers do.
 *
 * Node-only. Nothing here reaches the HTTP server, the simulator or the scripts.
 */
import { createJobsClient as createIntake, type JobsClient, type JobsClientDeps } from '../services/intake.js';
import { defaultJobRegistry } from '../jobs/index.js';
import { createPausesAdmin as createPauses, type PausesAdmin } from '../services/degradation.js';
import type { JobRegistry } from '../job-api/registry.js';
import {
  createBulkActionsAdmin as createBulkAdmin,
  type BulkActionsAdmin,
  type BulkActionsAdminOptions,
} from '../services/bulk-actions.js';

export type ClientOptions = Omit<JobsClientDeps, 'jobs'> & {
  /** The job types this client may submit. Default: the shipped ones (`summarize`, `purchase`, `transcribe`, `digest`). */
  jobs?: JobsClientDeps['jobs'];
};

/** `createJobsClient({ pool, temporal, taskQueue })`: `submitJob` (now or delayed), `getJob`, `listJobs`, `cancelJob`. Errors are the coded classes below. */
export function createJobsClient(options: ClientOptions): JobsClient {
  return createIntake({ ...options, jobs: options.jobs ?? defaultJobRegistry });
}

/**
 * `createTenantsAdmin(pool)`: `createTenant`, `listTenants`, `addKey` (the raw key, returned
 * once), `revokeKey` (401 from the next request on, in every API process).
 */
export { createTenantsAdmin, type AddedKey, type TenantInfo, type TenantKeyInfo, type TenantsAdmin } from '../services/tenants.js';

/**
 * `createPausesAdmin(pool, jobs?)`: `list`, `pause` and `resume` a priority, a job type, a
 * tenant or a tenant's type (issue 38 §4), validated and audited as over HTTP. `jobs`: the
 * registry whose type names a pause may use (default: the shipped ones).
 */
export function createPausesAdmin(pool: ClientOptions['pool'], jobs: JobsClientDeps['jobs'] = defaultJobRegistry): PausesAdmin {
  return createPauses(pool, jobs.names);
}
export type { Pauses, PausesAdmin, PauseTarget } from '../services/degradation.js';

/**
 * `createBulkActionsAdmin({ pool, temporal, taskQueue, actor })`: bulk cancel, rerun, discard,
 * retry-now and replay by filter or IDs (preview first with `dryRun`), pause / resume / stop,
 * progress; `rerun` of one finished job (from a step); failure `clusters` of the dead letters.
 */
export function createBulkActionsAdmin(options: Omit<BulkActionsAdminOptions, 'jobs'> & { jobs?: JobRegistry }): BulkActionsAdmin {
  return createBulkAdmin({ ...options, jobs: options.jobs ?? defaultJobRegistry });
}
export type { BulkActionsAdmin, BulkActionsAdminOptions } from '../services/bulk-actions.js';
export type { BulkRequest, BulkFilter } from '../services/bulk-action-schemas.js';
export type { BulkProgress, BulkActionKind } from '../contract/bulk-actions.js';
export type { FailureCluster } from '../services/failure-clusters.js';
export type { RerunPlan } from '../services/reruns.js';
export type { JobsClient, JobsClientDeps, SubmitJobRequest, SubmitJobResult } from '../services/intake.js';
export type { EngineCondition, JobProgress, JobStatus, StaleResult } from '../services/job-status.js';
export type { JobPage, ListJobsFilter } from '../services/job-lists.js';
export type { JobArgs, JobBudget, JobBudgets, JobState, JobType, Priority } from '../contract/job-types.js';
export { JOB_STATES, PRIORITIES, TERMINAL_STATES, UNFINISHED_STATES, isTerminalState } from '../contract/job-types.js';
export type { JobRegistry } from '../job-api/registry.js';
export { builtInJobTypes, defaultJobRegistry } from '../jobs/index.js';
export {
  ConfigError,
  DurableJobsError,
  IdempotencyConflictError,
  NonRetryableError,
  NotFoundError,
  RateLimitedError,
  RetryableError,
  StateConflictError,
  UnavailableError,
  ValidationError,
  type Dependency,
  type FieldIssue,
} from '../lib/errors.js';
export { migrate, type MigrateOptions } from '../lib/migrate.js';
/**
 * Payload encryption (`PAYLOAD_CODEC_KEYS`): build your Temporal `Client` with
 * `dataConverter: { payloadCodecs: [createPayloadCodec(parsePayloadCodecKeys(keys))] }`, the same codec your workers run.
 */
export { AesGcmPayloadCodec, createPayloadCodec, parsePayloadCodecKeys, type PayloadCodecKey } from '../lib/payload-codec.js';
export type { ServerSecretOption } from '../lib/secret.js';
export { createSchedulesAdmin, listWebhookDeliveries, type SchedulesAdmin, type SchedulesAdminOptions } from './ops-admin.js';
