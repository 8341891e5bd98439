// Worker Versioning (workers/versioning.ts): a job is pinned to the build that started it, so a
// deploy of another build (made current) takes only new jobs while the old build finishes its
// own; and the deploy command's moves (set-current, ramp, rollback) on the real dev server.
import { execFile } from 'node:child_process';
import proto from '@temporalio/proto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { RETENTION_TABLES, type RetentionInput } from '../../contract/retention.js';
import { parseDeployArgs, runDeploy } from '../../scripts/deploy-command.js';
import { deploymentStatus, setCurrentWhenPolling } from '../../services/worker-deployments.js';
import { startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
const deployment = `dj-test-${uid()}`;
// Code versions as lib/code-version.ts makes them (dots and a plus in the build ID).
const A = `0.9.0+gaaaaaaaaaaaa.src${uid()}`;
const B = `0.9.1+gbbbbbbbbbbbb.src${uid()}`;

beforeAll(async () => {
  h = await startHarness('versioning', { workers: 0 });
});
afterEach(async () => {
  await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
});
afterAll(async () => {
  await h?.close();
});

const purchase = () => h.submit('purchase', { amountCents: 900, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'v@example.com' });

/** The identities of the workers that took the job's workflow and activity tasks. */
async function takenBy(jobId: string): Promise<Set<string>> {
  const history = await h.temporal.workflow.getHandle(jobId).fetchHistory();
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const identity = e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity) ids.add(identity);
  }
  return ids;
}

const deploy = (...argv: string[]) => runDeploy(parseDeployArgs([...argv, '--deployment', deployment], {}), h.temporal);

describe('a pinned job finishes on the build that started it', () => {
  it('runs a job started on A to its end on A after B is made current; new jobs go to B', async () => {
    await h.startWorker('build-a', { deploymentName: deployment, buildId: A });
    await setCurrentWhenPolling(h.temporal, deployment, A);

    // The first job's charge is held at the upstream until the test releases it: the job is in flight on A.
    await h.simFault({ path: '/v1/charges', times: 1, status: 200, delayMs: 600_000 });
    const first = (await purchase()).body.jobId as string;
    await waitFor('the charge held at the upstream', async () => {
      const pending = (await (await fetch(`${h.sim.url}/__sim/faults`)).json()) as { rules: unknown[] };
      return pending.rules.length === 0;
    });

    await h.startWorker('build-b', { deploymentName: deployment, buildId: B });
    await setCurrentWhenPolling(h.temporal, deployment, B);
    const s = await deploymentStatus(h.temporal, deployment);
    expect(s.current).toBe(B);
    expect(s.versions.find((v) => v.buildId === A)?.status).toBe('draining');

    const second = (await purchase()).body.jobId as string;
    await h.waitForStatus(second, 'succeeded');
    await fetch(`${h.sim.url}/__sim/holds/release`, { method: 'POST' });
    await h.waitForStatus(first, 'succeeded');

    expect([...(await takenBy(first))]).toEqual(['build-a']);
    expect([...(await takenBy(second))]).toEqual(['build-b']);
    const info = (await h.temporal.workflow.getHandle(first).describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(info?.deploymentVersion?.buildId).toBe(A);
    // Each job's effects applied once: one charge per job, whichever build ran it.
    const effects = await h.simEffects();
    const charges = Object.values(effects.byKey as Record<string, { path: string; applied: number }>).filter(
      (e) => e.path === '/v1/charges',
    );
    expect(charges.map((c) => c.applied)).toEqual([1, 1]);
  });
});

describe('system workflows', () => {
  it('an auto-upgrade one (retention) says so to Temporal; a job says pinned', async () => {
    const days = Object.fromEntries(RETENTION_TABLES.map((t) => [t, 3650])) as RetentionInput['days'];
    const workflowId = `retention-${uid()}`;
    await h.temporal.workflow.execute('retentionCleanup', { taskQueue: h.taskQueue, workflowId, args: [{ days, batchSize: 100 }] });
    const info = (await h.temporal.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(info?.behavior).toBe(proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE);
    const job = (await purchase()).body.jobId as string;
    await h.waitForStatus(job, 'succeeded');
    const pinned = (await h.temporal.workflow.getHandle(job).describe()).raw.workflowExecutionInfo?.versioningInfo;
    expect(pinned?.behavior).toBe(proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);
  });
});

describe('durable-jobs deploy', () => {
  it('ramps, ends the ramp on rollback, then rolls back to the previous current build', async () => {
    expect(await deploy('ramp', A, '25')).toContain('25%');
    expect((await deploymentStatus(h.temporal, deployment)).ramping).toEqual({ buildId: A, percent: 25 });

    expect(await deploy('rollback')).toContain(`ramp of ${A} ended`);
    let s = await deploymentStatus(h.temporal, deployment);
    expect(s).toMatchObject({ current: B, ramping: undefined });

    expect(await deploy('rollback')).toContain(`${A} is current again`);
    s = await deploymentStatus(h.temporal, deployment);
    expect(s.current).toBe(A);
    expect(JSON.parse(await deploy('status', '--json'))).toMatchObject({ name: deployment, current: A });

    // And forward again, as after a fixed build: set-current names the build it replaced.
    expect(await deploy('set-current', B)).toContain(`was ${A}`);
  });

  it('answers bad arguments with exit 2 and an unknown deployment with exit 1, naming it', async () => {
    // Not spawnSync: a blocked event loop lets the harness's keep-alive sockets go stale.
    const run = (...argv: string[]) =>
      new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
        execFile('npx', ['tsx', 'scripts/durable-jobs.ts', 'deploy', ...argv], { env, timeout: 60_000 }, (err, _out, stderr) =>
          resolve({ status: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
        );
      });
    const bad = await run('ramp', B, '150', '--deployment', deployment);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('percent must be a number from 0 to 100');
    const unknown = await run('status', '--deployment', `missing-${uid()}`);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('no Worker Deployment "missing-');
  });
});
