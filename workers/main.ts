/**
 * `npm run worker`: one worker process for the configured Temporal, Postgres and upstream.
 * Production runs workers this way, as many processes as the load needs.
 */
import { NativeConnection } from '@temporalio/worker';
import { hostname } from 'node:os';
import { loadConfig } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';
import { exitWithParent, onShutdown } from '../lib/shutdown.js';
import { connectionOptions } from '../lib/temporal.js';
import { createWorker } from './worker.js';
import { defaultJobRegistry } from '../jobs/index.js';

exitWithParent();
const config = loadConfig(process.env, { jobTypes: defaultJobRegistry.names });
const log = createLogger('worker', config.logLevel);
if (!config.databaseUrl || !config.temporalAddress || !config.providerUrl) {
  log.fatal('a standalone worker needs DATABASE_URL, TEMPORAL_ADDRESS and PROVIDER_URL (npm start sets them for its own workers)');
  process.exit(2);
}
const pool = createPool(config.databaseUrl, log, config.tuning.pgPoolSize);
const connection = await NativeConnection.connect(await connectionOptions(config, config.temporalAddress));
const worker = await createWorker({
  connection,
  namespace: config.temporalNamespace,
  taskQueue: config.taskQueue,
  pool,
  providerUrl: config.providerUrl,
  fallbackProviderUrl: config.providerFallbackUrl,
  log,
  codeVersion: config.codeVersion,
  concurrencyLimits: config.concurrencyLimits,
  jobBudgets: config.jobBudgets,
  identity: `${process.pid}@${hostname()}`,
  concurrencyTotal: config.tuning.concurrencyTotal,
  maxConcurrentActivityTaskExecutions: config.tuning.activitySlots,
  maxConcurrentWorkflowTaskExecutions: config.tuning.workflowSlots,
  maxCachedWorkflows: config.tuning.cachedWorkflows,
  maxConcurrentWorkflowTaskPolls: config.tuning.workflowPollers,
  maxConcurrentActivityTaskPolls: config.tuning.activityPollers,
});
onShutdown(
  async () => {
    log.info('draining the worker');
    worker.shutdown();
  },
  (m) => log.warn(m),
);
log.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace }, 'worker polling');
await worker.run();
await connection.close();
await pool.end();
log.info('worker stopped');
