/**
 * `durable-jobs deploy status|set-current|ramp|rollback`: Worker Versioning for an operator
 * (scripts/deploy-command.ts, docs/deploying.md). Talks to Temporal (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE and the connection settings), not to the API. Exit 2: bad arguments;
 * 1: Temporal refused or is unreachable.
 */
import { loadConfig } from '../lib/config.js';
import { connectClient } from '../lib/temporal.js';
import { jobRegistryFromEnv } from '../job-api/load.js';
import { defaultJobRegistry } from '../jobs/index.js';
import { UsageError } from './lib/admin-api.js';
import { DEPLOY_USAGE, parseDeployArgs, runDeploy } from './deploy-command.js';

async function main(): Promise<void> {
  const args = parseDeployArgs(process.argv.slice(2), process.env);
  const jobs = await jobRegistryFromEnv(process.env, () => defaultJobRegistry);
  const config = loadConfig(process.env, { jobTypes: jobs.names, fastPathTypes: jobs.fastPathTypes });
  if (!config.temporalAddress) throw new UsageError('set TEMPORAL_ADDRESS (host:port of the Temporal frontend)');
  const temporal = await connectClient(config, config.temporalAddress);
  try {
    console.log(await runDeploy(args, temporal));
  } finally {
    await temporal.connection.close();
  }
}

main().catch((err: Error) => {
  console.error(err instanceof UsageError ? `${err.message}\n\n${DEPLOY_USAGE}` : `error: ${err.message}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
