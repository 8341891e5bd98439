/**
 * `npm run worker`: one worker process for the configured Temporal, Postgres and upstream.
 * Production runs workers this way, as many processes as the load needs.
 */
import { NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfigOrExit } from '../lib/config-or-exit.js';
import { createPool } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';
import { exitWithParent, onShutdown } from '../lib/shutdown.js';
import { connectionOptions, workerIdentity } from '../lib/temporal.js';
import { createWorker } from './worker.js';
import { allocatorAdvice } from '../lib/worker-allocator.js';
import { defaultJobRegistry } from '../jobs/index.js';

exitWithParent();
const config = loadConfigOrExit('worker', process.env, {
  jobTypes: defaultJobRegistry.names,
  fastPathTypes: defaultJobRegistry.fastPathTypes,
});
const log = createLogger('worker', config.logLevel);
if (!config.databaseUrl || !config.temporalAddress || !config.providerUrl) {
  log.fatal('a standalone worker needs DATABASE_URL, TEMPORAL_ADDRESS and PROVIDER_URL (npm start sets them for its own workers)');
  process.exit(2);
}
const advice = allocatorAdvice(
  process.env,
  (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime,
);
if (advice) log.warn(advice);
const pool = createPool(config.databaseUrl, log, config.tuning.pgPoolSize);
// The SDK's Runtime would install its own SIGINT/SIGTERM handlers (Runtime.install's default
// `shutdownSignals`) beside ours; one owner of the signals decides when the process exits.
Runtime.install({ shutdownSignals: [] });
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
  fastPathTypes: config.fastPathTypes,
  identity: workerIdentity(process.pid),
  shutdownGraceMs: config.workerShutdownGraceSeconds * 1000,
  concurrencyTotal: config.tuning.concurrencyTotal,
  maxConcurrentActivityTaskExecutions: config.tuning.activitySlots,
  maxConcurrentWorkflowTaskExecutions: config.tuning.workflowSlots,
  maxCachedWorkflows: config.tuning.cachedWorkflows,
  maxConcurrentWorkflowTaskPolls: config.tuning.workflowPollers,
  maxConcurrentActivityTaskPolls: config.tuning.activityPollers,
});
// run() resolves once the worker has stopped polling and every in-flight task finished (or
// was cancelled at the grace deadline); only then may the process exit. Exiting as soon as
// shutdown() returns abandons the attempts: each waits for its heartbeat timeout and runs again.
const stopped = worker.run().then(async () => {
  await connection.close();
  await pool.end();
  log.info('worker stopped');
});
onShutdown(
  async (signal) => {
    log.info(
      { signal, graceSeconds: config.workerShutdownGraceSeconds },
      'draining the worker: polling stopped, in-flight attempts finish',
    );
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await stopped;
  },
  (m) => log.warn(m),
);
log.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace }, 'worker polling');
await stopped;
