/**
 * `durable-jobs/jobs/workflow`: what a job type's `definition.ts` and `workflow.ts`
 * may import. Everything here is workflow-safe: Temporal bundles it into the workflow sandbox,
 * so it must never reach Node built-ins, `pg` or activities (only their types).
 */
export { defineJob, budgetOf, type JobDefinition, type JobDefinitionOptions, type JobInput } from './define.js';
export type { CompletionEvent, EmailMessage, NotifiedJob, NotifyOptions } from './notify.js';
export type {
  InboundEvent,
  ScheduleTriggerOptions,
  ScheduleWindow,
  SignalTarget,
  WebhookRoute,
  WebhookTriggerOptions,
} from './define-triggers.js';
export { runJob, type JobOutcome } from '../workflows/lifecycle.js';
export { resultStored, type SetPhase } from '../workflows/job-state.js';
export { stepOptions, bookkeepingActivities, BOOKKEEPING_OPTIONS } from '../workflows/activity-options.js';
export { stepActivities, type StepActivitiesOptions } from '../workflows/step-activities.js';
export { deliverNotifications } from '../workflows/notifications.js';
export {
  DEFAULT_BUDGET,
  DEFAULT_CONCURRENCY,
  type ConcurrencyLimits,
  type JobArgs,
  type JobBudget,
  type StepArgs,
} from '../contract/job-types.js';
/** The product's own activities a job's workflow may call (the outbox delivery): types only. */
export type { SystemActivities } from '../activities/index.js';
