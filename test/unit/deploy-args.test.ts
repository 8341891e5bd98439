import { describe, expect, it } from 'vitest';
import { parseDeployArgs } from '../../scripts/deploy-command.js';
import { UsageError } from '../../scripts/lib/admin-api.js';
import { previousCurrent, type DeploymentVersion } from '../../services/worker-deployments.js';
import { parseDeploymentName, versioningOptions } from '../../workers/versioning.js';

const v = (buildId: string, status: DeploymentVersion['status'], deactivatedAt?: string): DeploymentVersion => ({
  buildId,
  status,
  drainage: undefined,
  createdAt: undefined,
  deactivatedAt,
});

describe('durable-jobs deploy arguments', () => {
  it('takes the deployment from --deployment, else DURABLE_JOBS_DEPLOYMENT', () => {
    expect(parseDeployArgs(['ramp', 'b2', '10', '--deployment=acme'], {})).toMatchObject({
      command: 'ramp',
      deployment: 'acme',
      buildId: 'b2',
      percent: 10,
    });
    expect(parseDeployArgs(['status', '--json'], { DURABLE_JOBS_DEPLOYMENT: 'acme' })).toMatchObject({ command: 'status', json: true });
  });
  it.each([
    [['status'], /which Worker Deployment/],
    [['set-current', '--deployment', 'acme'], /takes 1 argument/],
    [['ramp', 'b2', '150', '--deployment', 'acme'], /percent must be a number from 0 to 100/],
    [['promote', '--deployment', 'acme'], /unknown deploy command/],
    [['status', '--deployment', 'a.b'], /no dot/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseDeployArgs(argv, {})).toThrow(UsageError);
    expect(() => parseDeployArgs(argv, {})).toThrow(message);
  });
});

describe('worker versioning options', () => {
  it('stays unversioned without a deployment name, sending the code version as its build ID', () => {
    expect(versioningOptions('1.0.0+gabc.src1', undefined)).toEqual({ buildId: '1.0.0+gabc.src1' });
    expect(parseDeploymentName('')).toBeUndefined();
  });
  it('pins by default with one', () => {
    expect(versioningOptions('1.0.0+gabc.src1', 'acme')).toEqual({
      workerDeploymentOptions: {
        useWorkerVersioning: true,
        version: { deploymentName: 'acme', buildId: '1.0.0+gabc.src1' },
        defaultVersioningBehavior: 'PINNED',
      },
    });
  });
});

describe('rollback target', () => {
  it('is the version most recently replaced as current, never the current one or one never current', () => {
    const versions = [
      v('b1', 'drained', '2026-12-01T00:00:00Z'),
      v('b2', 'draining', '2026-12-02T00:00:00Z'),
      v('b3', 'current'),
      v('b4', 'inactive'),
    ];
    expect(previousCurrent({ current: 'b3', versions })).toBe('b2');
    expect(previousCurrent({ current: 'b3', versions: [v('b3', 'current'), v('b4', 'inactive')] })).toBeUndefined();
  });
});
