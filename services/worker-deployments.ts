/**
 * Worker Deployments (Temporal Worker Versioning, workers/versioning.ts) as an operator sees
 * them: which build takes new jobs (current), which takes a share of them (ramping), which still
 * finish the jobs pinned to them (draining) or have none left (drained), and the three moves of
 * a deploy: make a build current, ramp one, roll back. Built on the WorkflowService calls the
 * `temporal worker deployment` commands use.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { hostname, userInfo } from 'node:os';

const Status = proto.temporal.api.enums.v1.WorkerDeploymentVersionStatus;
const Drainage = proto.temporal.api.enums.v1.VersionDrainageStatus;

export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'created' | 'unknown';

export interface DeploymentVersion {
  buildId: string;
  status: VersionStatus;
  /** For a draining version: whether pinned workflows still run on it (`draining`) or none do (`drained`). */
  drainage: 'draining' | 'drained' | undefined;
  createdAt: string | undefined;
  /** When it last stopped being current or ramping; a rollback goes back to the latest such version. */
  deactivatedAt: string | undefined;
}

export interface DeploymentStatus {
  name: string;
  /** The build new jobs start on; undefined: unversioned workers take them. */
  current: string | undefined;
  ramping: { buildId: string; percent: number } | undefined;
  versions: DeploymentVersion[];
}

/** A deploy step the server refuses or cannot do (no such deployment or version, nothing to roll back to). */
export class DeploymentError extends Error {}

type Ts = { seconds?: unknown; nanos?: number | null } | null | undefined;
const iso = (t: Ts): string | undefined =>
  t?.seconds === undefined || t.seconds === null
    ? undefined
    : new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();

const STATUS_NAMES: Record<number, VersionStatus> = {
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED]: 'created',
};

/** Who made a change, in the deployment's `lastModifierIdentity`. */
const identity = (): string => `durable-jobs deploy ${userInfo().username}@${hostname()}`;

/**
 * gRPC NOT_FOUND (5), and FAILED_PRECONDITION (9, "does your Worker Deployment have pollers?":
 * what the server answers before a deployment's first poll), as a DeploymentError that says
 * what is missing; anything else unchanged.
 */
function notFound(err: unknown, what: string): never {
  const code = (err as { code?: number })?.code;
  const message = (err as Error).message.replace(/^\d+ [A-Z_]+: /, '');
  if (code === 5) throw new DeploymentError(`${what} (${message})`);
  if (code === 9) throw new DeploymentError(`Temporal refused: ${message}`);
  throw err;
}

export async function deploymentStatus(temporal: Client, name: string): Promise<DeploymentStatus> {
  const res = await temporal.workflowService
    .describeWorkerDeployment({ namespace: temporal.options.namespace, deploymentName: name })
    .catch((err: unknown) => notFound(err, `no Worker Deployment "${name}": no versioned worker of it has polled yet`));
  const info = res.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const versions = (info?.versionSummaries ?? []).map((v): DeploymentVersion => ({
    buildId: v.deploymentVersion?.buildId ?? v.version?.split('.').slice(1).join('.') ?? '',
    status: STATUS_NAMES[v.status ?? 0] ?? 'unknown',
    drainage:
      v.drainageStatus === Drainage.VERSION_DRAINAGE_STATUS_DRAINING
        ? 'draining'
        : v.drainageStatus === Drainage.VERSION_DRAINAGE_STATUS_DRAINED
          ? 'drained'
          : undefined,
    createdAt: iso(v.createTime),
    deactivatedAt: iso(v.lastDeactivationTime ?? v.routingUpdateTime),
  }));
  const rampingId = routing?.rampingDeploymentVersion?.buildId;
  return {
    name,
    current: routing?.currentDeploymentVersion?.buildId || undefined,
    ramping: rampingId ? { buildId: rampingId, percent: routing?.rampingVersionPercentage ?? 0 } : undefined,
    versions,
  };
}

/** Makes `buildId` the build new jobs start on (ending any ramp to it); returns the build that was current. */
export async function setCurrentVersion(temporal: Client, name: string, buildId: string): Promise<{ previous: string | undefined }> {
  const res = await temporal.workflowService
    .setWorkerDeploymentCurrentVersion({ namespace: temporal.options.namespace, deploymentName: name, buildId, identity: identity() })
    .catch((err: unknown) => notFound(err, `no version "${buildId}" in Worker Deployment "${name}": start its workers first`));
  return { previous: res.previousDeploymentVersion?.buildId || undefined };
}

/** Sends `percent` (0-100) of new jobs to `buildId`, the rest to the current build; percent 0 with an empty build ID ends the ramp. */
export async function rampVersion(temporal: Client, name: string, buildId: string, percent: number): Promise<void> {
  await temporal.workflowService
    .setWorkerDeploymentRampingVersion({
      namespace: temporal.options.namespace,
      deploymentName: name,
      buildId,
      percentage: percent,
      identity: identity(),
    })
    .catch((err: unknown) => notFound(err, `no version "${buildId}" in Worker Deployment "${name}": start its workers first`));
}

/**
 * Undoes the last step of a deploy: a ramp in progress is ended (every new job back on the
 * current build); otherwise the build that was current before is made current again. Jobs
 * already started stay on their own build either way (pinned).
 */
export async function rollback(temporal: Client, name: string): Promise<{ action: 'ramp-ended' | 'current-restored'; buildId: string }> {
  const s = await deploymentStatus(temporal, name);
  if (s.ramping) {
    await rampVersion(temporal, name, '', 0);
    return { action: 'ramp-ended', buildId: s.ramping.buildId };
  }
  const previous = previousCurrent(s);
  if (!previous) throw new DeploymentError(`Worker Deployment "${name}" has no earlier version to roll back to`);
  await setCurrentVersion(temporal, name, previous);
  return { action: 'current-restored', buildId: previous };
}

/** The version most recently replaced as current: a draining or drained one, latest deactivation first. */
export function previousCurrent(s: Pick<DeploymentStatus, 'versions' | 'current'>): string | undefined {
  const once = s.versions
    .filter((v) => v.buildId !== s.current && (v.status === 'draining' || v.status === 'drained') && v.deactivatedAt)
    .sort((a, b) => (b.deactivatedAt! > a.deactivatedAt! ? 1 : b.deactivatedAt! < a.deactivatedAt! ? -1 : 0));
  return once[0]?.buildId;
}

/**
 * Makes `buildId` current once its workers have polled (the server knows a version only from
 * its pollers): what the dev stack and the tests do for their own versioned workers, where no
 * operator is there to run `deploy set-current`.
 */
export async function setCurrentWhenPolling(temporal: Client, name: string, buildId: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await setCurrentVersion(temporal, name, buildId);
      return;
    } catch (err) {
      if (!(err instanceof DeploymentError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
