/**
 * `durable-jobs/server`: the HTTP API and the operator console for a team's job types.
 *
 * - `createServer({ jobs, pool, temporal, ... })`: a Fastify server of its own; `listen()` it.
 * - `durableJobsPlugin`: the same routes in a team's own Fastify app, under a prefix:
 *   `app.register(durableJobsPlugin, { prefix: '/jobs-api', jobs, pool, temporal, ... })`.
 * - `runServer({ jobs })`: the whole API process from the environment, as `durable-jobs api` runs it.
 * - `startAdminListener(app, ...)`: `/metrics`, `/openapi.json` and the detailed `/readyz` on a
 *   second (loopback) listener; on the app itself they need an admin key (docs/security-limits.md).
 *
 * Run `migrate(pool)` (from `durable-jobs/client`) before the first request, or use `runServer`,
 * which migrates and seeds `SEED_TENANTS`.
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { ServerSecretOption } from '../lib/secret.js';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import { createJobRegistry, type JobRegistry, type JobTypeModule } from '../job-api/registry.js';
import type { JobBudgets } from '../contract/job-types.js';
import { DEFAULT_TASK_QUEUE } from '../lib/config.js';
import type { HttpLimits } from '../lib/http-limits.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { startHealthSampler, type HealthSampler } from '../services/health-sampler.js';
import { createJobsClient } from '../services/intake.js';
import { buildApp, registerDurableJobs, type AppDeps } from './app.js';

export interface ServerOptions {
  /** The job types the API accepts (and dry-runs, replays, lists): the same registry the workers run. */
  jobs: JobRegistry | readonly JobTypeModule[];
  pool: pg.Pool;
  temporal: Client;
  /** The deployment's shared task queue (`TASK_QUEUE`). Default `durable-jobs`. */
  taskQueue?: string;
  log?: Logger;
  /** Admin keys of the console and the admin API: one key (operator `admin`) or hashed keys naming operators. */
  adminApiKey?: string;
  adminKeys?: AppDeps['adminKeys'];
  /** Webhook sources and their `whsec_` secrets (first signs, all verify). Default none. */
  webhookSecrets?: AppDeps['webhookSecrets'];
  /** Base URL of the Temporal Web UI the console links to. */
  temporalUiUrl?: string;
  /** Shown in `/openapi.json` and compared with dead letters' versions in dry runs. Default `unversioned`. */
  version?: string;
  /** Budget overrides per type (`JOB_BUDGETS`). */
  budgets?: JobBudgets;
  /** Types that take the fast path (`FAST_PATH_JOB_TYPES`). */
  fastPath?: ReadonlySet<string>;
  /** Request, header, idle and keep-alive timeouts and the connection cap of `createServer`. Default `DEFAULT_HTTP_LIMITS`. */
  httpLimits?: HttpLimits;
  /** The server secret (`DURABLE_JOBS_SECRET`), shared with the workers. Default: the one this process installed. */
  secret?: ServerSecretOption;
  /** The payload codec the workers and `temporal` run (`PAYLOAD_CODEC_KEYS`): serves `/codec/encode` and `/codec/decode` for the Web UI. Default none. */
  payloadCodec?: PayloadCodec;
  /** Sample the queue-health trend figures every 15 s while the server is up (services/health-sampler.ts). Default true. */
  healthSamples?: boolean;
}

function appDeps(o: ServerOptions): AppDeps & { close(): Promise<void> } {
  const jobTypes = Array.isArray(o.jobs) ? createJobRegistry(o.jobs as readonly JobTypeModule[]) : (o.jobs as JobRegistry);
  const log = o.log ?? createLogger('api', 'info');
  const jobs = createJobsClient({
    pool: o.pool,
    temporal: o.temporal,
    taskQueue: o.taskQueue ?? DEFAULT_TASK_QUEUE,
    jobs: jobTypes,
    ...(o.budgets ? { budgets: o.budgets } : {}),
    ...(o.fastPath ? { fastPath: o.fastPath } : {}),
    ...(o.secret ? { secret: o.secret } : {}),
  });
  return {
    pool: o.pool,
    temporal: o.temporal,
    jobs,
    jobTypes,
    log,
    ...(o.adminKeys ? { adminKeys: o.adminKeys } : {}),
    ...(o.adminApiKey ? { adminApiKey: o.adminApiKey } : {}),
    ...(o.temporalUiUrl ? { temporalUiUrl: o.temporalUiUrl } : {}),
    webhookSecrets: o.webhookSecrets ?? {},
    version: o.version ?? 'unversioned',
    ...(o.httpLimits ? { httpLimits: o.httpLimits } : {}),
    ...(o.payloadCodec ? { payloadCodec: o.payloadCodec } : {}),
    close: () => jobs.close(),
  };
}

/** The console's health plots read samples taken on a schedule, from ready to close (not only while someone looks). */
function sampleHealth(app: FastifyInstance, deps: AppDeps, on = true): void {
  if (!on) return;
  let sampler: HealthSampler | undefined;
  const taskQueues = deps.jobTypes.taskQueues(deps.jobs.taskQueue);
  app.addHook('onReady', async () => {
    sampler = startHealthSampler({ pool: deps.pool, temporal: deps.temporal, taskQueues, log: deps.log });
  });
  app.addHook('onClose', async () => sampler?.stop());
}

/** A Fastify server with the API and the console; closing it flushes the intake's start marks. */
export function createServer(o: ServerOptions): FastifyInstance {
  const deps = appDeps(o);
  const app = buildApp(deps);
  sampleHealth(app, deps, o.healthSamples);
  app.addHook('onClose', async () => deps.close());
  return app;
}

/** The API and the console as routes of a team's own Fastify app, under the prefix it registers them with. */
export const durableJobsPlugin: FastifyPluginAsync<ServerOptions> = async (app, o) => {
  const deps = appDeps(o);
  registerDurableJobs(app, deps);
  sampleHealth(app, deps, o.healthSamples);
  app.addHook('onClose', async () => deps.close());
};

export { runServer, type RunServerOptions } from './run.js';
export { BODY_LIMIT } from './app.js';
export { startAdminListener, type AdminListener } from './admin-listener.js';
export { DEFAULT_HTTP_LIMITS, type AdminListenerConfig, type HttpLimits } from '../lib/http-limits.js';
