/**
 * Worker Versioning (Temporal Worker Deployments): a worker given a deployment name registers
 * its code version as a Worker Deployment Version (`<deployment>.<build ID>`) and takes only the
 * tasks Temporal routes to that version. A job workflow is **pinned**: it runs to its end on the
 * build that started it, so a changed workflow body needs no `patched()` branch for the runs
 * already in flight (they never replay on the new code). New runs go to the deployment's
 * *current* version, which an operator sets (`durable-jobs deploy set-current|ramp|rollback`);
 * until then a new version's workers get no tasks.
 *
 * Without a deployment name a worker stays unversioned, as before: every worker of the queue
 * takes any task, so a workflow change must stay replay-compatible (docs/deploying.md).
 */
import type { WorkerOptions as SdkWorkerOptions } from '@temporalio/worker';
import { ConfigError } from '../lib/errors.js';

/**
 * The server joins the two parts as `<deployment>.<build ID>` and splits at the first dot, so a
 * deployment name has none; the build ID (the code version, `1.4.0+g<commit>.src<hash>`) may.
 */
const DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

/** A deployment name as given (`--deployment`, `DURABLE_JOBS_DEPLOYMENT`), checked; a bad one is a ConfigError naming what is allowed. */
export function parseDeploymentName(value: string | undefined, source = 'DURABLE_JOBS_DEPLOYMENT'): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!DEPLOYMENT_NAME.test(value)) {
    throw new ConfigError(
      `${source} must be 1-100 letters, digits, "-" or "_", starting with a letter or digit (no dot: Temporal joins it with the build ID by one)`,
    );
  }
  return value;
}

/** Build IDs longer than this are refused by the server's default limits. */
const MAX_BUILD_ID = 255;

/**
 * The SDK options for a worker of `codeVersion`: with a deployment name, a versioned worker whose
 * workflows are pinned unless a workflow type says otherwise (`setWorkflowOptions`); without
 * one, the unversioned worker of before, which still sends its code version as its build ID so
 * the pollers list says which code polls (services/worker-versions.ts).
 */
export function versioningOptions(
  codeVersion: string,
  deploymentName: string | undefined,
): Pick<SdkWorkerOptions, 'buildId' | 'workerDeploymentOptions'> {
  if (!deploymentName) return codeVersion ? { buildId: codeVersion } : {};
  if (!codeVersion || codeVersion.length > MAX_BUILD_ID) {
    throw new ConfigError(
      `a versioned worker (deployment "${deploymentName}") needs a code version of 1-${MAX_BUILD_ID} characters as its build ID`,
    );
  }
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true,
      version: { deploymentName, buildId: codeVersion },
      // Every job type's workflow, the team's own included, finishes on the build that started it.
      defaultVersioningBehavior: 'PINNED',
    },
  };
}
