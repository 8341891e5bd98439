/**
 * `createWorker` of the package face: one worker process's polling for the job types it is
 * given. A Temporal worker polls one task queue, so this makes one per queue the types need:
 * the shared queue (the types without a queue of their own, and the system workflows: replay,
 * scan, schedule trigger, retention, outbox redelivery) and each type's own queue. All of them
 * share one connection, one workflow bundle and one set of activities.
 */
import { hostname } from 'node:os';
import type { NativeConnection, Worker, WorkflowBundleOption } from '@temporalio/worker';
import type pg from 'pg';
import { createJobRegistry, type JobRegistry, type JobTypeModule } from '../job-api/registry.js';
import { DEFAULT_TASK_QUEUE } from '../lib/config.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { bundleWorkflows, createQueueWorker, type WorkerOptions } from './worker.js';

export interface DurableWorkerOptions extends Omit<
  WorkerOptions,
  'jobs' | 'taskQueue' | 'namespace' | 'providerUrl' | 'log' | 'codeVersion' | 'connection' | 'pool'
> {
  /** The job types this worker runs, and nothing else: a registry or a list of `jobType(...)`. */
  jobs: JobRegistry | readonly JobTypeModule[];
  connection: NativeConnection;
  pool: pg.Pool;
  /** Temporal namespace. Default `default`. */
  namespace?: string;
  /** The deployment's shared task queue (`TASK_QUEUE`). Default `durable-jobs`. */
  taskQueue?: string;
  /**
   * Whether this worker also runs the system workflows (replay, scan, schedule trigger,
   * retention, outbox redelivery) on the shared queue. Default true. With false, a worker whose
   * types all have queues of their own does not poll the shared queue at all; a worker with a
   * type on the shared queue polls it anyway and can take system tasks there.
   */
  system?: boolean;
  /** Base URL of the upstream `ctx.effect` calls (`PROVIDER_URL`). Without it an effect fails, not retried, naming the setting. */
  providerUrl?: string;
  log?: Logger;
  /** The version recorded with every attempt and dead letter. Default `unversioned`. */
  codeVersion?: string;
}

export interface DurableWorker {
  /** The task queues polled, the shared one first when polled. */
  readonly taskQueues: readonly string[];
  /** The job types run. */
  readonly jobTypes: readonly string[];
  readonly workers: readonly Worker[];
  /** Polls until `shutdown()`; resolves once every queue's in-flight tasks finished or were cancelled at the grace deadline. */
  run(): Promise<void>;
  /** Stops polling on every queue; in-flight attempts finish within the grace time. */
  shutdown(): void;
  /** Runs until `promise` settles, then shuts down and waits for the drain; returns its value. */
  runUntil<T>(promise: Promise<T>): Promise<T>;
}

/** The queues a worker for `jobs` polls: the shared one when `system` or any type needs it, then each type's own. */
export function queuesFor(jobs: JobRegistry, sharedQueue: string, system: boolean): string[] {
  const queues = jobs.taskQueues(sharedQueue);
  const own = queues.filter((q) => q !== sharedQueue);
  return system || queues.includes(sharedQueue) ? [sharedQueue, ...own] : own;
}

export async function createWorker(o: DurableWorkerOptions): Promise<DurableWorker> {
  const jobs = Array.isArray(o.jobs) ? createJobRegistry(o.jobs as readonly JobTypeModule[]) : (o.jobs as JobRegistry);
  const sharedQueue = o.taskQueue ?? DEFAULT_TASK_QUEUE;
  const queues = queuesFor(jobs, sharedQueue, o.system ?? true);
  if (queues.length === 0) throw new Error('createWorker: no job types and system: false leave this worker nothing to poll');
  const log = o.log ?? createLogger('worker', 'info');
  const bundle: WorkflowBundleOption = o.workflowBundle ?? (await bundleWorkflows(jobs, log));
  const identity = o.identity ?? `${process.pid}@${hostname()}`;
  const workers: Worker[] = [];
  for (const taskQueue of queues) {
    workers.push(
      await createQueueWorker({
        ...o,
        jobs,
        taskQueue,
        namespace: o.namespace ?? 'default',
        providerUrl: o.providerUrl,
        log,
        codeVersion: o.codeVersion ?? 'unversioned',
        workflowBundle: bundle,
        identity,
      }),
    );
  }
  const shutdown = () => {
    for (const w of workers) if (w.getState() === 'RUNNING' || w.getState() === 'INITIALIZED') w.shutdown();
  };
  const run = async () => {
    // One queue's worker failing (a fatal poll error) stops the others: a half-polling process would hide it.
    const runs = workers.map((w) =>
      w.run().catch((err: unknown) => {
        shutdown();
        throw err;
      }),
    );
    const results = await Promise.allSettled(runs);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  return {
    taskQueues: queues,
    jobTypes: jobs.names,
    workers,
    run,
    shutdown,
    async runUntil<T>(promise: Promise<T>): Promise<T> {
      const running = run();
      try {
        return await promise;
      } finally {
        shutdown();
        await running;
      }
    },
  };
}
