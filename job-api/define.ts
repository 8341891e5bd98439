/**
 * The job-definition API: one `defineJob(...)` per job type (`jobs/<type>/definition.ts`) holds
 * every fact about it. The definition is workflow-safe (plain data, a zod schema and pure
 * functions), so the type's workflow body (`workflow.ts`) reads its budget and description
 * from it inside Temporal's sandbox; its activities (`activities.ts`) read its effect steps,
 * and `jobType(...)` there joins the three for the registry.
 *
 * Never rename `name`, `workflowType` or an effect step: the name is in every stored intent,
 * the workflow type in every running history, and each step name is part of its effect key
 * (`<jobId>:<step>`), which is what makes a retry or a replay reuse the effect it already made.
 */
import type { z } from 'zod';
import { DEFAULT_BUDGET, DEFAULT_CONCURRENCY, type ConcurrencyLimits, type JobArgs, type JobBudget } from '../contract/job-types.js';
import {
  resolveSchedule,
  resolveWebhook,
  type JobSchedule,
  type JobWebhook,
  type ScheduleTriggerOptions,
  type WebhookTriggerOptions,
} from './define-triggers.js';
import { resolveNotify, type JobNotify, type NotifyOptions } from './notify.js';

export interface JobDefinitionOptions<S extends z.ZodType, E extends string> {
  /** The job type's name: the `type` of `POST /v1/jobs`. Lower-case letters, digits and dashes. */
  name: string;
  /** The Temporal workflow type: the name of the workflow function the type's module exports. */
  workflowType: string;
  /** One line: shown in the Web UI (static details, current details) and the OpenAPI document. */
  description: string;
  /** Validates `input` at intake; the TypeScript input type is `z.infer` of it (`JobInput<typeof def>`). */
  input: S;
  /** Overrides of `DEFAULT_BUDGET` (lease 10 s, attempt 5 min, elapsed 10 min, 8 attempts, jitter 500 ms-30 s, call 15 s). */
  budget?: Partial<JobBudget>;
  /** Overrides of `DEFAULT_CONCURRENCY` (8 per tenant, 32 in total), before `CONCURRENCY_LIMITS`. */
  concurrency?: Partial<ConcurrencyLimits>;
  /**
   * Every external effect the type can make, in order, by its stable step name. The single
   * source for the effect keys the activities use (`definition.step('charge')`), the replay
   * dry run and the docs.
   */
  effects: readonly E[];
  /** The effects a job with this input makes (the dry run lists these). Default: all of `effects`. */
  effectsFor?: (input: z.infer<S>) => readonly E[];
  /**
   * Whether a status read may ask for the last successful result of the same tenant, type and
   * input while the job has none yet (`?allowStale=true`), always labelled stale with its
   * time. Only for results still useful late. Default false.
   */
  staleResult?: boolean;
  /**
   * Whether the type may use the fallback upstream (`PROVIDER_FALLBACK_URL`), only while an
   * operator has switched it there; never on its own. Only for effects whose business result
   * does not depend on which provider made it. Default false.
   */
  fallback?: boolean;
  /**
   * What the upstream does with a request whose effect is in doubt (an earlier attempt may
   * have reached it unseen). `idempotentByKey`: a re-send with the same Idempotency-Key is
   * answered with the first response, never applied twice; if false, an in-doubt effect is
   * never re-sent blind (without `lookupByKey` it stops for an operator, `effect_in_doubt`).
   * `lookupByKey`: the upstream answers `GET /v1/idempotency/{key}`; the next attempt asks it
   * first and records a completed effect without calling again. Default: idempotent by key, no lookup.
   */
  upstream?: { idempotentByKey: boolean; lookupByKey?: boolean };
  /** The Web UI's one-line summary of a job. Default `<type> for tenant <t> (<priority> priority)`. */
  summary?: (args: JobArgs) => string;
  /** Accepted over `POST /v1/jobs`. Default true; false for types only schedules start. */
  submittable?: boolean;
  /**
   * The type may take the fast path (README "The fast path"), where the deployment enables it
   * (`FAST_PATH_JOB_TYPES`): its steps run as local activities, the whole job in one workflow
   * task, under a second workflow type that the type's workflow module exports (`workflowType`
   * here; it must differ from the standard one). Only for types whose every effect is short
   * (well inside the attempt timeout) and keyed to an upstream that is idempotent by key: a
   * lost workflow task runs the step again. Default: no fast path.
   */
  fastPath?: { workflowType: string };
  /**
   * The Temporal task queue the type's jobs run on. Default: the deployment's shared queue
   * (`TASK_QUEUE`), which also carries the system workflows. A type on a queue of its own is
   * run only by workers given that type (`createWorker({ jobs })` polls the queue of every type
   * it runs), so one team's types and workers never take another's tasks.
   */
  taskQueue?: string;
  /**
   * Start jobs of this type on a schedule (docs/triggers.md): a Temporal Schedule, created or
   * updated when the API starts, fires `cron` or `every`; each firing stands for a window and
   * starts one job per tenant and window (`perTenant`), with `input(window)`. A duplicate
   * firing, a backfill or the compensation scan's repair finds the window's jobs. Default none.
   */
  schedule?: ScheduleTriggerOptions<z.infer<S>>;
  /**
   * Receive the events `events` of the webhook source `source` (docs/triggers.md): `route(event)`
   * starts a job of this type or signals a running one. A source bound to a tenant only starts
   * or touches that tenant's jobs. Default none.
   */
  webhook?: WebhookTriggerOptions<z.infer<S>, E>;
  /**
   * What a succeeded job sends (job-api/notify.ts; docs/effects-and-upstreams.md "Notifications"):
   * the tenant's completion webhook and/or an e-mail, each an outbox row written with the
   * result and delivered as its own effect (`notify-<target>`). Default none.
   */
  notify?: NotifyOptions<z.infer<S>>;
}

export interface JobDefinition<S extends z.ZodType = z.ZodType, E extends string = string> {
  readonly name: string;
  readonly workflowType: string;
  readonly description: string;
  readonly input: S;
  readonly budget: JobBudget;
  readonly concurrency: ConcurrencyLimits;
  readonly effects: readonly E[];
  effectsFor(input: z.infer<S>): readonly E[];
  readonly staleResult: boolean;
  readonly fallback: boolean;
  readonly submittable: boolean;
  /** The fast path's workflow type, or null when the type has none. */
  readonly fastPathWorkflowType: string | null;
  readonly upstream: { idempotentByKey: boolean; lookupByKey: boolean };
  /** The type's own task queue, or null: the deployment's shared queue. */
  readonly taskQueue: string | null;
  /** Its schedule, checked, with defaults; null: no schedule starts it. */
  readonly schedule: JobSchedule<z.infer<S>> | null;
  /** Its webhook subscription; null: no webhook reaches it. */
  readonly webhook: JobWebhook<z.infer<S>, E> | null;
  /** What a succeeded job sends; null: nothing. */
  readonly notify: JobNotify<z.infer<S>> | null;
  summary(args: JobArgs): string;
  /** A declared step name, checked by the compiler: the effect key's stable part. */
  step(name: E): E;
}

export type JobInput<D> = D extends JobDefinition<infer S> ? z.infer<S> : never;

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const TASK_QUEUE = /^[A-Za-z0-9._:-]{1,200}$/;
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function defineJob<S extends z.ZodType, const E extends string>(o: JobDefinitionOptions<S, E>): JobDefinition<S, E> {
  if (!NAME.test(o.name))
    throw new Error(`job type name "${o.name}" must be lower-case letters, digits and dashes, starting with a letter`);
  if (!IDENT.test(o.workflowType))
    throw new Error(`job type ${o.name}: workflowType "${o.workflowType}" must be the name of an exported function`);
  if (o.fastPath && (!IDENT.test(o.fastPath.workflowType) || o.fastPath.workflowType === o.workflowType))
    throw new Error(`job type ${o.name}: fastPath.workflowType "${o.fastPath.workflowType}" must be the name of another exported function`);
  if (o.fastPath && !(o.upstream?.idempotentByKey ?? true))
    throw new Error(
      `job type ${o.name}: the fast path re-runs a step after a lost workflow task, so its upstream must be idempotent by key`,
    );
  if (o.taskQueue !== undefined && !TASK_QUEUE.test(o.taskQueue))
    throw new Error(`job type ${o.name}: taskQueue "${o.taskQueue}" must be 1-200 characters of letters, digits, '.', '_', ':' and '-'`);
  for (const e of o.effects) {
    if (!NAME.test(e)) throw new Error(`job type ${o.name}: effect step "${e}" must be lower-case letters, digits and dashes`);
  }
  if (new Set(o.effects).size !== o.effects.length) throw new Error(`job type ${o.name}: effect steps must be unique`);
  const effects = [...o.effects];
  const schedule = o.schedule ? resolveSchedule(o.name, o.schedule) : null;
  const webhook = o.webhook ? resolveWebhook(o.name, o.webhook) : null;
  return {
    name: o.name,
    workflowType: o.workflowType,
    description: o.description,
    input: o.input,
    budget: { ...DEFAULT_BUDGET, ...o.budget },
    concurrency: { ...DEFAULT_CONCURRENCY, ...o.concurrency },
    effects,
    effectsFor: (input) => (o.effectsFor ? o.effectsFor(input) : effects),
    staleResult: o.staleResult ?? false,
    fallback: o.fallback ?? false,
    submittable: o.submittable ?? true,
    fastPathWorkflowType: o.fastPath?.workflowType ?? null,
    upstream: { idempotentByKey: o.upstream?.idempotentByKey ?? true, lookupByKey: o.upstream?.lookupByKey ?? false },
    taskQueue: o.taskQueue ?? null,
    schedule,
    webhook,
    notify: o.notify ? resolveNotify(o.name, o.notify) : null,
    summary: o.summary ?? ((a) => `${a.jobType} for tenant ${a.tenantId} (${a.priority} priority)`),
    step: (name) => {
      if (!effects.includes(name)) throw new Error(`job type ${o.name} declares no effect step "${name}"`);
      return name;
    },
  };
}

/** The task queue a type's jobs run on: its own, else the deployment's shared one. */
export function taskQueueOf(definition: Pick<JobDefinition, 'taskQueue'>, sharedQueue: string): string {
  return definition.taskQueue ?? sharedQueue;
}

/** The budget a job runs with: its type's, with the overrides it was started with. */
export function budgetOf(definition: Pick<JobDefinition, 'budget'>, args: Pick<JobArgs, 'budget'>): JobBudget {
  return { ...definition.budget, ...args.budget };
}
