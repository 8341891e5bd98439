import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { JobArgs, JobBudgets } from '../contract/job-types.js';
import { JobStateKey, JobTypeKey, TenantIdKey } from '../contract/messages.js';
import { taskQueueOf, type JobDefinition } from '../job-api/define.js';

export type { JobBudgets } from '../contract/job-types.js';

/** True for "a run with this ID already closed": over the worker's connection the error may arrive as raw gRPC ALREADY_EXISTS (6). */
export function isAlreadyStarted(err: unknown): boolean {
  return (
    err instanceof WorkflowExecutionAlreadyStartedError ||
    (err as { name?: string })?.name === 'WorkflowExecutionAlreadyStartedError' ||
    (err as { code?: number })?.code === 6
  );
}

/**
 * The definition a new job of this type starts with: on the fast path (its type named in
 * `FAST_PATH_JOB_TYPES`, and declaring one) the same definition under its fast-path workflow
 * type; otherwise the definition itself.
 */
export function onStartPath(d: JobDefinition, fastPath: ReadonlySet<string> | undefined): JobDefinition {
  return d.fastPathWorkflowType && fastPath?.has(d.name) ? { ...d, workflowType: d.fastPathWorkflowType } : d;
}

/**
 * The one way a job's workflow is started (intake, schedule triggers, the compensation scan):
 * a running run with this ID is the same job (USE_EXISTING) and a finished one is never run
 * again (REJECT_DUPLICATE). The search attributes make it filterable in the Web UI; the
 * input stays in Postgres. The deployment's budget override for the type (`budgets`) is
 * resolved here, so jobs started by a schedule or the scan get it too, and carried in the
 * arguments so a running job keeps the budget it started with. Returns false when a closed
 * run already had the ID. `replaceClosed` (default false): a closed run with the ID is a
 * previous job that retention deleted, so the new job starts a new run under the same ID
 * (ALLOW_DUPLICATE); only the intake may say so, for an intent it has just inserted.
 *
 * `runAt` (a delayed job, issue 38 §2): a time still ahead becomes Temporal's start delay. Why
 * a start delay and not a timer in the workflow: the run exists at once (so the intake's
 * persist-start-confirm path, its idempotency and the compensation scan are unchanged, and
 * a duplicate submit finds it), yet no workflow task runs before the time, so no job workflow
 * needed a change or a patch and no worker holds anything for it. Temporal shows the run with
 * its execution time ahead (a delayed run); `JobState` says `scheduled` until it runs. A cancel
 * request does not wait for the delay: it schedules the first workflow task at once, the
 * workflow sees the cancellation before any step and records `cancelled`. A time already past
 * (a retry, the scan) starts it at once.
 */
export async function startJobWorkflow(
  client: Client,
  taskQueue: string,
  info: JobDefinition,
  base: JobArgs,
  budgets?: JobBudgets,
  opts: { replaceClosed?: boolean; runAt?: Date | null } = {},
): Promise<boolean> {
  const budget = base.budget ?? budgets?.[base.jobType];
  const args: JobArgs = budget ? { ...base, budget } : base;
  const delayMs = opts.runAt ? opts.runAt.getTime() - Date.now() : 0;
  try {
    await client.workflow.start(info.workflowType, {
      taskQueue: taskQueueOf(info, taskQueue),
      workflowId: args.jobId,
      args: [args],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: opts.replaceClosed ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: TenantIdKey, value: args.tenantId },
        { key: JobTypeKey, value: args.jobType },
        { key: JobStateKey, value: delayMs > 0 ? 'scheduled' : 'queued' },
      ],
      ...(delayMs > 0 ? { startDelay: delayMs } : {}),
      priority: taskPriority(args),
      staticSummary: info.summary(args),
      staticDetails: `${info.description}. Input is stored in Postgres (job_intents), not in this history.`,
    });
    return true;
  } catch (err) {
    if (isAlreadyStarted(err)) return false;
    throw err;
  }
}

/** Temporal's priority key per job priority (1 runs first; 3 is Temporal's default). */
const PRIORITY_KEY = { high: 2, normal: 3, low: 4 } as const;

/**
 * The job's Temporal task priority (issue 38 §5): its priority key, and its tenant as the
 * fairness key, so one tenant's backlog on a shared task queue does not hold another's tasks
 * back: the matching service dispatches backlogged tasks round-robin across fairness keys
 * (weight 1 each) within a priority key. Set on the workflow; its activities and local
 * activities inherit it. The server honours it with dynamic config `matching.useNewMatcher`
 * and `matching.enableFairness` (scripts/lib/dev-server.ts sets both; docs/operations-flow.md);
 * without them it is ignored and dispatch stays first in, first out.
 */
export function taskPriority(args: Pick<JobArgs, 'tenantId' | 'priority'>): { priorityKey: number; fairnessKey: string } {
  return { priorityKey: PRIORITY_KEY[args.priority] ?? 3, fairnessKey: args.tenantId };
}

/**
 * The newest run with this workflow ID: running or not, and when it started; null when
 * Temporal has none. Other errors (Temporal unreachable) are thrown.
 */
export async function latestRun(client: Client, workflowId: string): Promise<{ running: boolean; startTime: Date } | null> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return { running: d.status.name === 'RUNNING', startTime: d.startTime };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}

/** Clocks of Postgres, this process and Temporal may differ by this much when start times are compared. */
export const CLOCK_SKEW_MS = 5_000;

/**
 * Starts the workflow of an intent that exists but has no recorded start (an earlier start
 * failed, or its marker was not written). A closed run with its ID is its own (it ran) unless
 * it started before the intent was created: then it is a previous job whose intent retention
 * deleted, and a new run starts under the same ID (never "started" without a run of its own).
 * `rpc` wraps each Temporal call (the intake gives it a deadline); `runAt`: the intent's start
 * time (`job_intents.run_at`), so a delayed job started late still waits for its time.
 */
export async function startExistingIntent(
  client: Client,
  taskQueue: string,
  info: JobDefinition,
  base: JobArgs,
  intentCreatedAt: Date,
  budgets?: JobBudgets,
  opts: { rpc?: <T>(fn: () => Promise<T>) => Promise<T>; runAt?: Date | null } = {},
): Promise<void> {
  const rpc = opts.rpc ?? (<T>(fn: () => Promise<T>) => fn());
  if (await rpc(() => startJobWorkflow(client, taskQueue, info, base, budgets, { runAt: opts.runAt }))) return;
  const closed = await rpc(() => latestRun(client, base.jobId));
  if (closed && closed.startTime.getTime() < intentCreatedAt.getTime() - CLOCK_SKEW_MS)
    await rpc(() => startJobWorkflow(client, taskQueue, info, base, budgets, { replaceClosed: true, runAt: opts.runAt }));
}
