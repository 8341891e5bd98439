/**
 * The registry of job types: the one list the worker (workflows and activities), the intake
 * (validation, workflow type, budgets), the OpenAPI document, the dead-letter dry run and the
 * degradation settings read. `createJobRegistry([...])` takes one `jobType(...)` per type.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Provider } from '../activities/provider.js';
import type { ConcurrencyLimits, JobBudgets, JobType } from '../contract/job-types.js';
import type { Logger } from '../lib/logger.js';
import type { JobDefinition } from './define.js';
import type { Credential } from '../lib/credentials.js';
import type { Upstream } from './upstream.js';

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
  /** Cap on upstream calls across every job type and tenant (config `CONCURRENCY_TOTAL`). Default: none. */
  totalConcurrency?: number | undefined;
  /** Budget overrides (`JOB_BUDGETS`) for jobs that schedules and the scan start. */
  jobBudgets?: JobBudgets | undefined;
  /** Types whose jobs take the fast path (`FAST_PATH_JOB_TYPES`) when schedules, the scan or a replay start them. */
  fastPathTypes?: ReadonlySet<JobType> | undefined;
}

// Activity functions take and return anything serialisable; each job type's module types its own.
export type ActivityFunction = (...args: any[]) => Promise<any>;

export interface JobTypeModule {
  definition: JobDefinition;
  /** Absolute path of the module that exports the workflow function `definition.workflowType`. */
  workflowsPath: string;
  /**
   * Absolute path of the module that exports the definition, when given: the worker loads it
   * once per workflow thread instead of once per cached workflow (`workers/worker.ts`).
   */
  definitionPath?: string;
  /**
   * `jobType`'s `sharedWorkflow`: true, the worker evaluates the workflow module once per
   * workflow thread (as the workflow library) instead of once per cached workflow; false,
   * never; absent, when the module keeps no state in module scope (checked when the worker
   * bundles: workers/module-state.ts).
   */
  sharedWorkflow?: boolean;
  /** The type's activities, wired with the worker's dependencies. Each key is a Temporal activity type. */
  activities: (deps: ActivityDeps) => Record<string, ActivityFunction>;
  /** The upstreams its effects call: their credentials are read when a worker for the type starts. */
  upstreams?: readonly Upstream[];
}

/**
 * Joins a definition to its worker side: `workflows` is the module with the workflow body
 * (pass `new URL('./workflow.ts', import.meta.url)`), `activities` its activity factory.
 * The worker evaluates the workflow module (and the local modules it imports, the definition
 * among them) once per workflow thread, before any workflow, instead of once for every workflow
 * in its cache (each would build its own input schema), whenever that is safe: when they keep
 * nothing in module scope that a workflow could change (no `let` or `var` at the top level, no
 * Map or Set, no container that is not exported; workers/module-state.ts checks it when the
 * worker bundles, and the worker logs a warning naming what it found otherwise). What a
 * workflow keeps belongs inside its workflow function. The SDK freezes what it loads that way.
 *
 * `sharedWorkflow` (optional) overrides that check: `false` never shares the module (say so for
 * a module that keeps state on purpose: no warning), `true` shares it unchecked.
 * `definitionModule` (optional) names the module that exports the definition, for a type whose
 * workflow module is not shared: the definition alone is then evaluated once per thread.
 */
export function jobType<A extends { [K in keyof A]: ActivityFunction }>(
  definition: JobDefinition,
  worker: {
    workflows: URL | string;
    /** The type's activities (an interface of step functions is fine: no index signature needed). */
    activities: (deps: ActivityDeps) => A;
    definitionModule?: URL | string;
    sharedWorkflow?: boolean;
    /** The upstreams its steps call (`defineUpstream`, `httpUpstream`): a worker reads their credentials at start. Default none. */
    upstreams?: readonly Upstream[];
  },
): JobTypeModule {
  return {
    definition,
    workflowsPath: modulePath(worker.workflows),
    ...(worker.definitionModule ? { definitionPath: modulePath(worker.definitionModule) } : {}),
    ...(worker.sharedWorkflow !== undefined ? { sharedWorkflow: worker.sharedWorkflow } : {}),
    ...(worker.upstreams ? { upstreams: worker.upstreams } : {}),
    activities: worker.activities as JobTypeModule['activities'],
  };
}

/**
 * A module's file: the `.ts` source when it exists (tsx, this repo), else the `.js` the
 * package build emitted beside it (`dist/`), so one `new URL('./workflow.ts', ...)` works in both.
 */
export function modulePath(file: URL | string): string {
  const p = file instanceof URL || file.startsWith('file:') ? fileURLToPath(file) : file;
  return p.endsWith('.ts') && !existsSync(p) && existsSync(`${p.slice(0, -3)}.js`) ? `${p.slice(0, -3)}.js` : p;
}

export interface JobRegistry {
  readonly names: readonly JobType[];
  readonly modules: readonly JobTypeModule[];
  has(name: string): boolean;
  get(name: string): JobDefinition | undefined;
  /** The definition of a registered type; throws for an unknown one (a bug, not user input). */
  require(name: string): JobDefinition;
  /** Types that declare a fallback upstream: the only ones an operator may switch to it. */
  readonly fallbackTypes: readonly JobType[];
  /** Types that declare a fast path (`fastPath`): the only ones `FAST_PATH_JOB_TYPES` may name. */
  readonly fastPathTypes: readonly JobType[];
  /** The task queues the types run on: each type's own, and `sharedQueue` for the types without one. */
  taskQueues(sharedQueue: string): string[];
  /** Every credential of the types' upstreams: a worker reads them at start (lib/credentials.ts). */
  readonly credentials: readonly Credential[];
  /** Each type's concurrency caps, with the deployment's overrides (`CONCURRENCY_LIMITS`). */
  concurrencyLimits(overrides?: Partial<Record<JobType, Partial<ConcurrencyLimits>>>): Record<JobType, ConcurrencyLimits>;
}

/** Workflow types of the product's own workflows: no job type may take one of these names. */
export const SYSTEM_WORKFLOW_TYPES = ['scheduleTrigger', 'compensationScan', 'replayDeadLetters'] as const;

export function createJobRegistry(modules: readonly JobTypeModule[]): JobRegistry {
  const byName = new Map<string, JobTypeModule>();
  const workflowTypes = new Set<string>(SYSTEM_WORKFLOW_TYPES);
  for (const m of modules) {
    const d = m.definition;
    if (byName.has(d.name)) throw new Error(`job type ${d.name} is registered twice`);
    if (workflowTypes.has(d.workflowType)) throw new Error(`job type ${d.name}: workflow type ${d.workflowType} is already taken`);
    if (d.fastPathWorkflowType && workflowTypes.has(d.fastPathWorkflowType))
      throw new Error(`job type ${d.name}: workflow type ${d.fastPathWorkflowType} (its fast path) is already taken`);
    byName.set(d.name, m);
    workflowTypes.add(d.workflowType);
    if (d.fastPathWorkflowType) workflowTypes.add(d.fastPathWorkflowType);
  }
  const list = [...byName.values()];
  return {
    names: list.map((m) => m.definition.name),
    modules: list,
    has: (name) => byName.has(name),
    get: (name) => byName.get(name)?.definition,
    require(name) {
      const m = byName.get(name);
      if (!m) throw new Error(`job type ${name} is not registered in this process`);
      return m.definition;
    },
    fallbackTypes: list.filter((m) => m.definition.fallback).map((m) => m.definition.name),
    fastPathTypes: list.filter((m) => m.definition.fastPathWorkflowType).map((m) => m.definition.name),
    credentials: [...new Set(list.flatMap((m) => (m.upstreams ?? []).flatMap((u) => u.credentials)))],
    taskQueues: (sharedQueue) => [...new Set(list.map((m) => m.definition.taskQueue ?? sharedQueue))],
    concurrencyLimits: (overrides = {}) =>
      Object.fromEntries(list.map((m) => [m.definition.name, { ...m.definition.concurrency, ...overrides[m.definition.name] }])),
  };
}
