/**
 * `durable-jobs deploy`: the Worker Versioning moves of a deploy (docs/deploying.md), against
 * Temporal directly (services/worker-deployments.ts). Kept apart from its entry point so a test
 * runs it with its own client.
 */
import type { Client } from '@temporalio/client';
import { parseDeploymentName } from '../workers/versioning.js';
import { ConfigError } from '../lib/errors.js';
import { deploymentStatus, rampVersion, rollback, setCurrentVersion, type DeploymentStatus } from '../services/worker-deployments.js';
import { table, UsageError } from './lib/admin-api.js';

export const DEPLOY_USAGE = `usage: durable-jobs deploy status [--json]
       durable-jobs deploy set-current <buildId>
       durable-jobs deploy ramp <buildId> <percent 0-100>   (0 ends the ramp)
       durable-jobs deploy rollback                        (ends a ramp, else restores the previous current build)
options: --deployment NAME (default DURABLE_JOBS_DEPLOYMENT); Temporal from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE
a build ID is a worker's code version (its log line "worker polling", or \`deploy status\`)`;

export interface DeployArgs {
  command: 'status' | 'set-current' | 'ramp' | 'rollback';
  deployment: string;
  buildId?: string;
  percent?: number;
  json: boolean;
}

/** The arguments, or a UsageError saying what is wrong. */
export function parseDeployArgs(argv: readonly string[], env: NodeJS.ProcessEnv): DeployArgs {
  const positional: string[] = [];
  let deployment = env.DURABLE_JOBS_DEPLOYMENT;
  let source = 'DURABLE_JOBS_DEPLOYMENT';
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') json = true;
    else if (a === '--deployment') [deployment, source] = [argv[++i], '--deployment'];
    else if (a.startsWith('--deployment=')) [deployment, source] = [a.slice('--deployment='.length), '--deployment'];
    else if (a.startsWith('--')) throw new UsageError(`unknown option ${a.slice(0, 40)}`);
    else positional.push(a);
  }
  const [command, ...rest] = positional;
  const want = { status: 0, 'set-current': 1, ramp: 2, rollback: 0 } as const;
  if (!command || !(command in want))
    throw new UsageError(command ? `unknown deploy command "${command.slice(0, 40)}"` : 'which deploy command?');
  const c = command as keyof typeof want;
  if (rest.length !== want[c]) throw new UsageError(`deploy ${c} takes ${want[c]} argument(s), got ${rest.length}`);
  let name: string | undefined;
  try {
    name = parseDeploymentName(deployment, source);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  if (!name) throw new UsageError('which Worker Deployment? pass --deployment NAME or set DURABLE_JOBS_DEPLOYMENT');
  const percent = c === 'ramp' ? Number(rest[1]) : undefined;
  if (percent !== undefined && !(Number.isFinite(percent) && percent >= 0 && percent <= 100)) {
    throw new UsageError(`percent must be a number from 0 to 100, got "${String(rest[1]).slice(0, 20)}"`);
  }
  return { command: c, deployment: name, buildId: rest[0], percent, json };
}

function statusText(s: DeploymentStatus): string {
  const head = [
    `deployment ${s.name}`,
    `current: ${s.current ?? '(none: unversioned workers take new jobs)'}`,
    ...(s.ramping ? [`ramping: ${s.ramping.buildId} at ${s.ramping.percent}%`] : []),
  ];
  const rows = s.versions.map((v) => [v.buildId, v.status, v.drainage, v.createdAt, v.deactivatedAt]);
  return `${head.join('\n')}\n\n${table(['build ID', 'status', 'drainage', 'created', 'deactivated'], rows)}`;
}

/** Runs one deploy command; returns what to print. Errors: UsageError (exit 2), DeploymentError and others (exit 1). */
export async function runDeploy(a: DeployArgs, temporal: Client): Promise<string> {
  switch (a.command) {
    case 'status': {
      const s = await deploymentStatus(temporal, a.deployment);
      return a.json ? JSON.stringify(s, null, 2) : statusText(s);
    }
    case 'set-current': {
      const { previous } = await setCurrentVersion(temporal, a.deployment, a.buildId!);
      return `${a.buildId} is current in ${a.deployment}: new jobs start on it (was ${previous ?? 'none'}; its pinned jobs finish on it)`;
    }
    case 'ramp': {
      await rampVersion(temporal, a.deployment, a.percent === 0 ? '' : a.buildId!, a.percent!);
      return a.percent === 0 ? `ramp ended in ${a.deployment}` : `${a.buildId} takes ${a.percent}% of new jobs in ${a.deployment}`;
    }
    case 'rollback': {
      const r = await rollback(temporal, a.deployment);
      return r.action === 'ramp-ended'
        ? `ramp of ${r.buildId} ended: every new job starts on the current build again`
        : `${r.buildId} is current again in ${a.deployment}; jobs started on the rolled-back build finish on it`;
    }
  }
}
