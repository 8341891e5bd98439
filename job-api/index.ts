/**
 * `durable-jobs/jobs`: define your own job types (Node side). A job type is a workflow module
 * (its `defineJob(...)` and workflow body: import only `durable-jobs/jobs/workflow` and zod
 * there, Temporal bundles that file; a separate `definition.ts` is fine) and its activities,
 * which import from here. Register it with `createJobRegistry([myJobType])` and give the one
 * registry to the client, the worker and the API (`--jobs <module>`). The shipped types are
 * `builtInJobTypes` of `durable-jobs/client`.
 */
export { defineJob, budgetOf, type JobDefinition, type JobDefinitionOptions, type JobInput } from './define.js';
// Notifications: `notify` in `defineJob` (docs/effects-and-upstreams.md "Notifications").
export type { CompletionEvent, EmailMessage, NotifiedJob, NotifyOptions } from './notify.js';
export { declaredNotifications } from '../activities/notify-plan.js';
// Triggers: `schedule` and `webhook` in `defineJob` (docs/triggers.md).
export type {
  InboundEvent,
  JobSchedule,
  JobWebhook,
  ScheduleTiming,
  ScheduleTriggerOptions,
  ScheduleWindow,
  SignalTarget,
  WebhookRoute,
  WebhookTriggerOptions,
} from './define-triggers.js';
export {
  createJobRegistry,
  jobType,
  SYSTEM_WORKFLOW_TYPES,
  type ActivityFunction,
  type JobRegistry,
  type JobTypeModule,
} from './registry.js';
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
export { PROGRESS_WRITE_INTERVAL_MS, type ProgressReport, type StoredProgress } from './progress.js';
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
export { claimEarlyWebhooks, finishedJobCounts, intentCreatedAt, type ClaimedWebhook } from '../activities/job-facts.js';
