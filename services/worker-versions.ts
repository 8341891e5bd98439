/**
 * Which code the workers of a task queue run, for the replay dry run's "changed since failure":
 * the replay job runs on its type's task queue, so the code that matters is that of the workers
 * polling it, not the API's own (the API may be another build, or not run the type's code at all).
 *
 * Every worker this package creates sends its code version as its Temporal build ID
 * (`workers/worker.ts`), and Temporal lists each poller's build ID in DescribeTaskQueue. A poller
 * without one (a worker created by other code: the SDK's default build ID names only the SDK)
 * says nothing about our code and is left out.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

/** The SDK's default build ID (`@temporalio/worker@<version>+<bundle checksum>`): not a code version. */
const SDK_DEFAULT_BUILD_ID = /^@temporalio\/worker@/;

/** The code versions of the workers polling `taskQueue` for activities (where effects run), sorted, distinct. */
export async function workerCodeVersions(temporal: Client, taskQueue: string): Promise<string[]> {
  const res = await temporal.connection.withDeadline(Date.now() + 3_000, () =>
    temporal.workflowService.describeTaskQueue({
      namespace: temporal.options.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }),
  );
  const versions = new Set<string>();
  for (const p of res.pollers ?? []) {
    const id = p.workerVersionCapabilities?.buildId || p.deploymentOptions?.buildId || '';
    if (id && !SDK_DEFAULT_BUILD_ID.test(id)) versions.add(id);
  }
  return [...versions].sort();
}

/**
 * The code version (build ID) of the worker `identity` polling `taskQueue` for workflow tasks, if
 * it polls and sent one: a workflow task failure names the worker that failed it, and an
 * unversioned worker's build ID is only in the pollers list. `deadline` in epoch ms (default 3 s).
 */
export async function pollerBuildId(
  temporal: Client,
  taskQueue: string,
  identity: string,
  deadline = Date.now() + 3_000,
): Promise<string | undefined> {
  const res = await temporal.connection.withDeadline(deadline, () =>
    temporal.workflowService.describeTaskQueue({
      namespace: temporal.options.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    }),
  );
  const p = (res.pollers ?? []).find((x) => x.identity === identity);
  const id = p?.workerVersionCapabilities?.buildId || p?.deploymentOptions?.buildId || '';
  return id && !SDK_DEFAULT_BUILD_ID.test(id) ? id : undefined;
}

/** What a dry run compares a dead letter's recorded version with. */
export interface ReplayCodeVersion {
  /** The workers' version (several joined with ", " while a deploy rolls), or the API's own when no worker polls. */
  codeVersion: string;
  /** `workers`: read from the pollers of `taskQueue`; `api`: no worker polls it, so the API's own version stands in. */
  codeVersionSource: 'workers' | 'api';
  /** Every distinct version among the workers (empty when none polls). */
  workerCodeVersions: string[];
  taskQueue: string;
}

/**
 * The version a replay on `taskQueue` would run with. With no worker polling (or Temporal not
 * answering) it falls back to the API's own version and says so, rather than failing the dry run.
 */
export async function replayCodeVersion(temporal: Client, taskQueue: string, apiCodeVersion: string): Promise<ReplayCodeVersion> {
  const workers = await workerCodeVersions(temporal, taskQueue).catch(() => []);
  return workers.length > 0
    ? { codeVersion: workers.join(', '), codeVersionSource: 'workers', workerCodeVersions: workers, taskQueue }
    : { codeVersion: apiCodeVersion, codeVersionSource: 'api', workerCodeVersions: [], taskQueue };
}

/** Whether the code changed since the failure: a replay may land on any polling worker, so any other version counts. */
export function codeChanged(recorded: string, current: ReplayCodeVersion): boolean {
  return current.codeVersionSource === 'workers'
    ? current.workerCodeVersions.some((v) => v !== recorded)
    : recorded !== current.codeVersion;
}
