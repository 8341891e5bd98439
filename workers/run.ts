/**
 * `runWorker`: a whole worker process from the environment, as `npm run worker` and
 * `durable-jobs worker` run it: configuration (DATABASE_URL, TEMPORAL_ADDRESS, TASK_QUEUE,
 * PROVIDER_URL, the tuning variables), one pool, one connection, `createWorker` for the given
 * job types, and SIGINT/SIGTERM handled as a drain: polling stops at once, in-flight attempts
 * finish within WORKER_SHUTDOWN_GRACE_SECONDS, then the process exits.
 */
import { NativeConnection, Runtime } from '@temporalio/worker';
import type { JobRegistry } from '../job-api/registry.js';
import { exitOnConfigError, loadConfigOrExit } from '../lib/config-or-exit.js';
import { createPool } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';
import { exitWithParent, onShutdown } from '../lib/shutdown.js';
import { connectionOptions } from '../lib/temporal.js';
import { allocatorAdvice } from '../lib/worker-allocator.js';
import { createWorker } from './durable-worker.js';
import { ConfigError } from '../lib/errors.js';
import { workerTelemetry } from './telemetry.js';
import { serverSecretFor } from '../lib/secret.js';
import { createPayloadCodec } from '../lib/payload-codec.js';
import { startTracing, stopTracing } from '../lib/tracing.js';
import { parseDeploymentName } from './versioning.js';

export interface RunWorkerOptions {
  /** The job types this process runs. */
  jobs: JobRegistry;
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Also run the system workflows on the shared queue (`DURABLE_JOBS_SYSTEM=false` turns it off). Default true. */
  system?: boolean;
  /**
   * The Worker Deployment (`durable-jobs worker --deployment`); default `DURABLE_JOBS_DEPLOYMENT`,
   * and without either an unversioned worker (workers/versioning.ts, docs/deploying.md).
   */
  deploymentName?: string;
}

/** Runs until SIGINT/SIGTERM (or the parent of `npm start` dies), then drains and exits the process. */
export async function runWorker(o: RunWorkerOptions): Promise<void> {
  const env = o.env ?? process.env;
  exitWithParent();
  const config = loadConfigOrExit('worker', env, { jobTypes: o.jobs.names, fastPathTypes: o.jobs.fastPathTypes });
  const log = createLogger('worker', config.logLevel);
  if (!config.databaseUrl || !config.temporalAddress) {
    log.fatal('a standalone worker needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets them for its own workers)');
    process.exit(2);
  }
  // Without an upstream every `ctx.effect(step, path, body)` would fail and dead-letter its job: refuse
  // to start instead, unless the deployment says its types call only upstreams they declare.
  if (!config.providerUrl && env.DURABLE_JOBS_NO_PROVIDER !== 'true') {
    log.fatal(
      'a standalone worker needs PROVIDER_URL (the upstream of ctx.effect(step, path, body)); a worker whose job types call only declared upstreams sets DURABLE_JOBS_NO_PROVIDER=true',
    );
    process.exit(2);
  }
  const advice = allocatorAdvice(
    env,
    (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime,
  );
  if (advice) log.warn(advice);
  const telemetry = await workerTelemetry(env, log).catch((err: unknown) => {
    if (!(err instanceof ConfigError)) throw err;
    log.fatal(err.message);
    process.exit(2);
  });
  // The API's secret (the dev stack's own file when none is configured); production refuses to start without one.
  const secret = await exitOnConfigError('worker', async () =>
    serverSecretFor(config.serverSecret, config.mode, env.DURABLE_JOBS_DATA_DIR || '.data'),
  );
  // Before the worker is made: its bundle and interceptors follow whether tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT).
  await startTracing({ serviceName: 'durable-jobs-worker', serviceVersion: config.codeVersion, env, log });
  const deploymentName = await exitOnConfigError('worker', async () =>
    parseDeploymentName(o.deploymentName ?? env.DURABLE_JOBS_DEPLOYMENT, o.deploymentName ? '--deployment' : 'DURABLE_JOBS_DEPLOYMENT'),
  );
  const pool = createPool(config.databaseUrl, log, config.tuning.pgPoolSize);
  // No signal handlers of the SDK's own (one owner of the signals decides when the process
  // exits), its logs through pino, the core's metrics when WORKER_METRICS_PORT is set.
  Runtime.install(telemetry.runtime);
  const connection = await NativeConnection.connect(await connectionOptions(config, config.temporalAddress));
  // A missing upstream credential is one line naming its variable, and exit code 2.
  const worker = await exitOnConfigError('worker', () =>
    createWorker({
      env,
      secret,
      payloadCodec: createPayloadCodec(config.payloadCodecKeys),
      jobs: o.jobs,
      system: o.system ?? env.DURABLE_JOBS_SYSTEM !== 'false',
      connection,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      pool,
      providerUrl: config.providerUrl,
      fallbackProviderUrl: config.providerFallbackUrl,
      log,
      codeVersion: config.codeVersion,
      deploymentName,
      concurrencyLimits: config.concurrencyLimits,
      jobBudgets: config.jobBudgets,
      fastPathTypes: config.fastPathTypes,
      shutdownGraceMs: config.workerShutdownGraceSeconds * 1000,
      concurrencyTotal: config.tuning.concurrencyTotal,
      maxConcurrentActivityTaskExecutions: config.tuning.activitySlots,
      maxConcurrentWorkflowTaskExecutions: config.tuning.workflowSlots,
      maxCachedWorkflows: config.tuning.cachedWorkflows,
      maxConcurrentWorkflowTaskPolls: config.tuning.workflowPollers,
      maxConcurrentActivityTaskPolls: config.tuning.activityPollers,
    }),
  );
  // run() resolves once every queue's worker has stopped polling and every in-flight task
  // finished (or was cancelled at the grace deadline); only then may the process exit. Exiting
  // as soon as shutdown() returns abandons the attempts: each waits for its heartbeat timeout and runs again.
  const stopped = worker.run().then(async () => {
    await connection.close();
    await pool.end();
    await stopTracing();
    log.info('worker stopped');
  });
  onShutdown(
    async (signal) => {
      log.info(
        { signal, graceSeconds: config.workerShutdownGraceSeconds },
        'draining the worker: polling stopped, in-flight attempts finish',
      );
      worker.shutdown();
      await stopped;
    },
    (m) => log.warn(m),
  );
  await telemetry.serve({ taskQueues: worker.taskQueues, jobTypes: worker.jobTypes, codeVersion: config.codeVersion });
  log.info(
    {
      taskQueues: worker.taskQueues,
      jobTypes: worker.jobTypes,
      namespace: config.temporalNamespace,
      ...(deploymentName ? { deployment: deploymentName, buildId: config.codeVersion } : {}),
    },
    deploymentName
      ? 'worker polling as a Worker Deployment Version: it gets new jobs once current (durable-jobs deploy set-current)'
      : 'worker polling',
  );
  await stopped;
}
