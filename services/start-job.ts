import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { JobArgs, JobBudgets } from '../contract/job-types.js';
import { JobStateKey, JobTypeKey, TenantIdKey } from '../contract/messages.js';
import type { JobDefinition } from '../job-api/define.js';

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
 * The one way a job's workflow is started (intake, schedule triggers, the compensation scan):
 * a running run with this ID is the same job (USE_EXISTING) and a finished one is never run
 * again (REJECT_DUPLICATE). The search attributes make it filterable in the Web UI; the
 * input stays in Postgres. The deployment's budget override for the type (`budgets`) is
 * resolved here, so jobs started by a schedule or the scan get it too, and carried in the
 * arguments so a running job keeps the budget it started with. Returns false when a closed
 * run already had the ID.
 */
export async function startJobWorkflow(
  client: Client,
  taskQueue: string,
  info: JobDefinition,
  base: JobArgs,
  budgets?: JobBudgets,
): Promise<boolean> {
  const budget = base.budget ?? budgets?.[base.jobType];
  const args: JobArgs = budget ? { ...base, budget } : base;
  try {
    await client.workflow.start(info.workflowType, {
      taskQueue,
      workflowId: args.jobId,
      args: [args],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: TenantIdKey, value: args.tenantId },
        { key: JobTypeKey, value: args.jobType },
        { key: JobStateKey, value: 'queued' },
      ],
      staticSummary: info.summary(args),
      staticDetails: `${info.description}. Input is stored in Postgres (job_intents), not in this history.`,
    });
    return true;
  } catch (err) {
    if (isAlreadyStarted(err)) return false;
    throw err;
  }
}
