import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities/index.js';
import { createProvider } from '../activities/provider.js';
import type { JobBudgets } from '../client/start-job-workflow.js';
import type { Logger } from '../lib/logger.js';
import { JOB_TYPES, type ConcurrencyLimits, type JobType } from '../workflows/job-types.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** Bundle once and share: bundling takes seconds, and every worker in a process can reuse it. */
export async function bundleWorkflows(): Promise<WorkflowBundleOption> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  return { code };
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  providerUrl: string;
  /** Fallback upstream (`PROVIDER_FALLBACK_URL`); default none: a job never switches. */
  fallbackProviderUrl?: string | undefined;
  log: Logger;
  codeVersion: string;
  /** Default: each job type's shipped limits. */
  concurrencyLimits?: Record<JobType, ConcurrencyLimits>;
  workflowBundle?: WorkflowBundleOption;
  /** Concurrent activity attempts per worker. Default 50. */
  maxConcurrentActivityTaskExecutions?: number;
  identity?: string;
  /** Budget overrides (`JOB_BUDGETS`) for jobs that schedules and the scan start. Default none. */
  jobBudgets?: JobBudgets;
}

export async function createWorker(o: WorkerOptions): Promise<Worker> {
  const limits = o.concurrencyLimits ?? (Object.fromEntries(Object.entries(JOB_TYPES).map(([t, i]) => [t, i.concurrency])) as Record<JobType, ConcurrencyLimits>);
  const activities = createActivities({
    pool: o.pool, provider: createProvider(o.providerUrl), log: o.log, codeVersion: o.codeVersion, limits,
    fallbackProvider: o.fallbackProviderUrl ? createProvider(o.fallbackProviderUrl) : undefined,
    jobBudgets: o.jobBudgets,
  });
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    workflowBundle: o.workflowBundle ?? (await bundleWorkflows()),
    activities,
    ...(o.identity ? { identity: o.identity } : {}),
    maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions ?? 50,
    // Let a running attempt finish its current write on shutdown instead of abandoning it.
    shutdownGraceTime: '10s',
  });
}
