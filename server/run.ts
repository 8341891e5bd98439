/**
 * `runServer`: the HTTP API process from the environment, as `npm run api` and
 * `durable-jobs api` run it: migrations and `SEED_TENANTS`, the Schedules its job types declare,
 * webhook secrets that rotate on SIGHUP, and a drain on SIGINT/SIGTERM.
 */
import type { JobRegistry } from '../job-api/registry.js';
import { exitOnConfigError, loadConfigOrExit } from '../lib/config-or-exit.js';
import { createPayloadCodec } from '../lib/payload-codec.js';
import { serverSecretFor, useServerSecret } from '../lib/secret.js';
import { createPool } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';
import { exitWithParent, onShutdown } from '../lib/shutdown.js';
import { connectClient } from '../lib/temporal.js';
import { startTracing, stopTracing } from '../lib/tracing.js';
import { webhookSecretsFrom } from '../lib/webhook-secrets.js';
import { startHealthSampler } from '../services/health-sampler.js';
import { createJobsClient } from '../services/intake.js';
import { ensureSchedules, productSchedules } from '../services/schedules.js';
import { prepareStack } from '../services/stack.js';
import { buildApp } from './app.js';
import { startAdminListener } from './admin-listener.js';
import { createWebhookKeyring, reloadWebhookSecretsOnSighup } from './webhook-keyring.js';

export interface RunServerOptions {
  /** The job types the API accepts: the same registry the workers run. */
  jobs: JobRegistry;
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** Serves until SIGINT/SIGTERM (or the parent of `npm start` dies), then closes and exits the process. */
export async function runServer(o: RunServerOptions): Promise<void> {
  const env = o.env ?? process.env;
  const registry = o.jobs;
  exitWithParent();
  const config = loadConfigOrExit('api', env, { jobTypes: registry.names, fastPathTypes: registry.fastPathTypes });
  const log = createLogger('api', config.logLevel);
  if (!config.databaseUrl || !config.temporalAddress) {
    log.fatal('the API needs DATABASE_URL and TEMPORAL_ADDRESS (npm start sets them)');
    process.exit(2);
  }
  // Job IDs and key hashes derive from it (seeding below hashes keys): the dev stack's own file
  // when none is configured; production refuses to start without one.
  useServerSecret(
    await exitOnConfigError('api', async () => serverSecretFor(config.serverSecret, config.mode, env.DURABLE_JOBS_DATA_DIR || '.data')),
  );
  const pool = createPool(config.databaseUrl, log, config.tuning.pgPoolSize);
  // Before the client is made: its interceptors follow whether tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT).
  await startTracing({ serviceName: 'durable-jobs-api', serviceVersion: config.codeVersion, env, log });
  const temporal = await connectClient(config, config.temporalAddress);
  const { applied } = await prepareStack(pool, {
    tenants: config.seedTenants,
    temporal: { connection: temporal.connection, namespace: config.temporalNamespace },
    migrationUrl: config.tuning.migrationUrl,
  });
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  // Schedules are declared in the job types' definitions (`defineJob({ schedule })`, read from the
  // registry) and services/schedules.ts, and created or updated here, idempotently (several API
  // processes may start at once). A failure must not keep the API down: log it; the next start
  // tries again, and the Schedules that exist keep firing meanwhile.
  await ensureSchedules(temporal, config.taskQueue, productSchedules(registry, config.retention)).then(
    (r) => log.info({ schedules: r }, 'schedules ensured'),
    (err: Error) => log.error({ err: { message: err.message, name: err.name } }, 'could not ensure schedules'),
  );
  const jobs = createJobsClient({
    pool,
    temporal,
    taskQueue: config.taskQueue,
    jobs: registry,
    budgets: config.jobBudgets,
    fastPath: config.fastPathTypes,
    startMarkWindowMs: config.tuning.startMarkWindowMs,
  });
  // Webhook secrets rotate without a restart: SIGHUP reads WEBHOOK_SECRETS_FILE again (README "Webhooks").
  const webhookKeyring = createWebhookKeyring(config.webhookSecrets);
  reloadWebhookSecretsOnSighup(
    webhookKeyring,
    () => webhookSecretsFrom(config.webhookSecretsSource.env, config.webhookSecretsSource.file),
    log,
  );
  const app = buildApp({
    pool,
    temporal,
    jobs,
    jobTypes: registry,
    log,
    adminKeys: config.adminKeys,
    temporalUiUrl: config.temporalUiUrl,
    traceUiUrl: config.traceUiUrl,
    webhookSecrets: webhookKeyring,
    version: config.codeVersion,
    httpLimits: config.httpLimits,
    sessions: config.sessions,
    ...(config.httpTls ? { tls: { cert: config.httpTls.cert, key: config.httpTls.key } } : {}),
    payloadCodec: createPayloadCodec(config.payloadCodecKeys),
  });
  await app.listen({ port: config.httpPort, host: config.httpHost });
  if (config.httpTls) log.info({ certFile: config.httpTls.certFile }, 'serving HTTPS');
  // /metrics, /openapi.json and the detailed /readyz without a key, on loopback by default (F7).
  const adminListener = await startAdminListener(app, config.adminListener, config.httpLimits, log).catch((err: Error) => {
    log.fatal({ err: { message: err.message } }, `ADMIN_LISTEN_PORT ${config.adminListener.port} could not be bound`);
    process.exit(2);
  });
  // The health plots' series is sampled on a schedule, not only while someone reads it (D11).
  const sampler = startHealthSampler({ pool, temporal, taskQueues: registry.taskQueues(config.taskQueue), log });
  onShutdown(
    async () => {
      await sampler.stop();
      await adminListener?.close();
      await app.close();
      // After the last request: its start mark is written before the pool ends.
      await jobs.close();
      await temporal.connection.close();
      await pool.end();
      await stopTracing(); // the last spans batched are exported
    },
    (m) => log.warn(m),
  );
}
