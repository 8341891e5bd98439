/**
 * `durable-jobs/jobs`: define your own job types (Node side). A job type is a folder with
 * `job.ts` (the definition and the workflow body: import only from `durable-jobs/jobs/workflow`
 * there, Temporal bundles that file) and `activities.ts` (its activities, which import from
 * here). Register it with `createJobRegistry([...builtInJobTypes, myJobType])` and pass the
 * registry to the client (`createJobsClient({ ..., jobs })`) and to the worker.
 */
export { defineJob, budgetOf, type JobDefinition, type JobDefinitionOptions, type JobInput } from './define.js';
export {
  createJobRegistry,
  jobType,
  SYSTEM_WORKFLOW_TYPES,
  type ActivityFunction,
  type JobRegistry,
  type JobTypeModule,
} from './registry.js';
export { builtInJobTypes, defaultJobRegistry } from '../jobs/index.js';
export {
  completeWithOutbox,
  runStep,
  type EffectOptions,
  type StepContext,
  type StepDeps,
  type UpstreamEffectOptions,
} from '../activities/job-steps.js';
// Upstreams: what an effect calls (README "Effects and upstreams").
export {
  defineUpstream,
  type EffectAnswer,
  type EffectCall,
  type EffectCallContext,
  type Upstream,
  type UpstreamError,
  type UpstreamOptions,
  type UpstreamSemantics,
} from './upstream.js';
export { httpUpstream, providerCodeOf, type HttpAnswer, type HttpUpstream, type HttpUpstreamOptions } from '../activities/http-upstream.js';
export { credential, type Credential, type CredentialSource } from '../lib/credentials.js';
export { parseRetryAfter } from '../lib/retry.js';
export type { ActivityDeps } from '../activities/deps.js';
export type { EffectResult } from '../activities/effects.js';
export {
  DEFAULT_BUDGET,
  DEFAULT_CONCURRENCY,
  type ConcurrencyLimits,
  type JobArgs,
  type JobBudget,
  type StepArgs,
} from '../contract/job-types.js';
export { NonRetryableError, RetryableError } from '../lib/errors.js';
