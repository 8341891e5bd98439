import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';

/**
 * Marks a workflow type auto-upgrade under Worker Versioning (workers/versioning.ts): it moves to
 * the deployment's current build at its next workflow task instead of staying pinned, so its
 * changes still go behind `patched()`. Only on a versioned worker: the server refuses a workflow
 * task completion that names a versioning behavior from an unversioned worker ("versioning
 * behavior cannot be specified without deployment options"), and the SDK 1.24 sends it anyway.
 * The getter runs once as a run starts (or is replayed into the cache), where
 * `currentDeploymentVersion` has a deployment name only when this task's worker is versioned (an
 * unversioned worker with a build ID reports one without).
 */
export function autoUpgrade(workflow: (...args: any[]) => Promise<unknown>): void {
  setWorkflowOptions(
    () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}),
    workflow,
  );
}
