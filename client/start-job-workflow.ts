import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { JobStateKey, JobTypeKey, TenantIdKey } from '../lib/temporal.js';
import { JOB_TYPES, type JobArgs } from '../workflows/job-types.js';

/** True for "a run with this ID already closed": over the worker's connection the error may arrive as raw gRPC ALREADY_EXISTS (6). */
export function isAlreadyStarted(err: unknown): boolean {
  return err instanceof WorkflowExecutionAlreadyStartedError
    || (err as { name?: string })?.name === 'WorkflowExecutionAlreadyStartedError'
    || (err as { code?: number })?.code === 6;
}

/**
 * The one way a job's workflow is started (intake, schedule triggers, the compensation scan):
 * a running run with this ID is the same job (USE_EXISTING) and a finished one is never run
 * again (REJECT_DUPLICATE). The search attributes make it filterable in the Web UI; the
 * input stays in Postgres. Returns false when a closed run already had the ID.
 */
export async function startJobWorkflow(client: Client, taskQueue: string, args: JobArgs): Promise<boolean> {
  const info = JOB_TYPES[args.jobType];
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
      staticSummary: `${args.jobType} for tenant ${args.tenantId} (${args.priority} priority)`,
      staticDetails: `${info.description}. Input is stored in Postgres (job_intents), not in this history.`,
    });
    return true;
  } catch (err) {
    if (isAlreadyStarted(err)) return false;
    throw err;
  }
}
