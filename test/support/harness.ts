import { randomBytes } from 'node:crypto';
import { tracingClientInterceptors } from '../../lib/tracing.js';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker, type WorkflowBundleOption } from '@temporalio/worker';
import pg from 'pg';
import { inject } from 'vitest';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { loadConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { buildApp } from '../../server/app.js';
import { startAdminListener } from '../../server/admin-listener.js';
import { DEFAULT_HTTP_LIMITS } from '../../lib/http-limits.js';
import { startSimulator, type Simulator } from '../../simulator/server.js';
import { bundleWorkflows, createQueueWorker } from '../../workers/worker.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import type { JobRegistry } from '../../job-api/registry.js';
import type { PayloadCodec } from '@temporalio/common';
import { dataConverterOf } from '../../lib/payload-codec.js';

/** Tenant a may submit `priority: high` (seeded so, F11); tenant b may not. */
export const TENANTS = {
  a: { id: 'tenant-a', key: 'key-tenant-a', highPriority: true },
  b: { id: 'tenant-b', key: 'key-tenant-b', highPriority: false },
} as const;
/** `ADMIN_API_KEY`: the key of operator "admin" (backwards compatibility). */
export const ADMIN_KEY = 'admin-key-for-tests-0123456789abcdef';
/**
 * Named operators (`ADMIN_API_KEYS`): each key names its operator in every audit row. Alice
 * has two keys (rotation: both open the API and both name her).
 */
export const OPERATORS = {
  alice: ['operator-key-alice-1-0123456789abcdef', 'operator-key-alice-2-0123456789abcdef'],
  bob: ['operator-key-bob-1-0123456789abcdef'],
  carol: ['operator-key-carol-1-0123456789abcdef'],
  dana: ['operator-key-dana-1-0123456789abcdef'],
  erin: ['operator-key-erin-1-0123456789abcdef'],
  olive: ['operator-key-olive-1-0123456789abcdef'],
  'ramp-test': ['operator-key-ramp-test-0123456789abcdef'],
} as const;
export type OperatorName = keyof typeof OPERATORS;
/** The (first) admin key of a named operator. */
export const operatorKey = (name: OperatorName): string => OPERATORS[name][0];
/** Through the real configuration parser: what `ADMIN_API_KEYS` and `ADMIN_API_KEY` become (digests only). */
export const ADMIN_KEYS = loadConfig(
  {
    ADMIN_API_KEYS: Object.entries(OPERATORS)
      .map(([name, keys]) => `${name}=${keys.join('|')}`)
      .join(','),
    ADMIN_API_KEY: ADMIN_KEY,
  },
  { jobTypes: defaultJobRegistry.names, mode: 'production' },
).adminKeys;
/** Test-only secret (not a real one): 32 random-looking bytes, base64. */
export const WEBHOOK_SECRET = `whsec_${Buffer.from('durable-jobs-test-webhook-secret').toString('base64')}`;
export const uid = () => randomBytes(6).toString('hex');

// The SDK's own lines (worker state changes, every retried attempt) drown the test report;
// TEST_SDK_LOG_LEVEL=WARN brings them back when debugging.
Runtime.install({ logger: new DefaultLogger((process.env.TEST_SDK_LOG_LEVEL as 'WARN' | 'ERROR' | undefined) ?? 'ERROR') });

const bundles = new Map<JobRegistry, Promise<WorkflowBundleOption>>();
/** One workflow bundle per test file and registry (bundling takes seconds; workers share it). */
export function workflowBundle(jobTypes: JobRegistry = defaultJobRegistry): Promise<WorkflowBundleOption> {
  let b = bundles.get(jobTypes);
  if (!b) bundles.set(jobTypes, (b = bundleWorkflows(jobTypes)));
  return b;
}

/** A database of its own per test file, so files never see each other's rows. */
export async function createTestDatabase(name: string, base = inject('databaseUrl')): Promise<string> {
  const db = `dj_${name.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${uid()}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${db}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${db}`;
  return url.toString();
}

export async function waitFor<T>(
  what: string | (() => string),
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}${last ? `: ${(last as Error).message}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Harness {
  name: string;
  databaseUrl: string;
  pool: pg.Pool;
  temporal: Client;
  taskQueue: string;
  sim: Simulator;
  jobs: JobsClient;
  baseUrl: string;
  /** The admin listener (`ADMIN_LISTEN_PORT`, as `npm run api` runs it): `/metrics`, `/openapi.json`, the detailed `/readyz`, no key. */
  opsUrl: string;
  log: Logger;
  workers: Worker[];
  /** Another in-process worker; `versioned`: a Worker Deployment Version of it (workers/versioning.ts) instead of the unversioned default. */
  startWorker(identity?: string, versioned?: { deploymentName: string; buildId: string }): Promise<Worker>;
  api(
    path: string,
    init?: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; tenant?: keyof typeof TENANTS | null },
  ): Promise<{ status: number; headers: Headers; body: any }>;
  submit(
    type: string,
    input: unknown,
    opts?: { key?: string; tenant?: keyof typeof TENANTS; priority?: string },
  ): Promise<{ status: number; headers: Headers; body: any }>;
  /** The simulator's effect ledger (`GET /__sim/effects`). */
  simEffects(): Promise<any>;
  /** Queues a simulator fault (`POST /__sim/faults`). */
  simFault(body: Record<string, unknown>): Promise<void>;
  waitForStatus(jobId: string, status: string | string[], tenant?: keyof typeof TENANTS, timeoutMs?: number): Promise<any>;
  /** A replay request's progress (`GET /v1/dead-letters/replays/{id}`) once it ended: completed, stopped or halted. */
  waitForReplay(replayId: string, timeoutMs?: number): Promise<any>;
  close(): Promise<void>;
}

/**
 * Everything one test file needs, on the shared real Temporal and Postgres: its own
 * database, task queue, simulator, in-process workers and HTTP API on a free port.
 */
export async function startHarness(
  name: string,
  opts: {
    workers?: number;
    webhookSecret?: string;
    temporalAddress?: string;
    postgresUrl?: string;
    fallbackProviderUrl?: string;
    jobTypes?: JobRegistry;
    /** The API's scrape cache (`AppDeps.metricsCacheMs`); default the product's 1000 ms. */
    metricsCacheMs?: number;
    /** Types whose jobs take the fast path (`FAST_PATH_JOB_TYPES`); default none. */
    fastPath?: string[];
    /** The payload codec of the client, the workers and the API's codec endpoint (`PAYLOAD_CODEC_KEYS`); default none. */
    payloadCodec?: PayloadCodec;
  } = {},
): Promise<Harness> {
  const log = createLogger(`test-${name}`, process.env.TEST_LOG_LEVEL ?? 'silent');
  const databaseUrl = await createTestDatabase(name, opts.postgresUrl);
  const pool = createPool(databaseUrl, log);
  await prepareStack(pool, {
    tenants: Object.values(TENANTS).map((t) => ({ tenantId: t.id, apiKey: t.key, highPriority: t.highPriority })),
  });
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address: opts.temporalAddress ?? inject('temporalAddress') });
  const temporal = new Client({
    connection,
    namespace,
    interceptors: { workflow: tracingClientInterceptors() },
    ...dataConverterOf(opts.payloadCodec),
  });
  const taskQueue = `tq-${name}-${uid()}`;
  const jobTypes = opts.jobTypes ?? defaultJobRegistry;
  const fastPath = new Set(opts.fastPath ?? []);
  const jobs = createJobsClient({ jobs: jobTypes, pool, temporal, taskQueue, fastPath });
  const webhookSecrets = { sim: [opts.webhookSecret ?? WEBHOOK_SECRET] };
  const app = buildApp({
    jobTypes,
    pool,
    temporal,
    jobs,
    log,
    adminKeys: ADMIN_KEYS,
    temporalUiUrl: 'http://127.0.0.1:8233',
    version: 'test',
    webhookSecrets,
    ...(opts.payloadCodec ? { payloadCodec: opts.payloadCodec } : {}),
    ...(opts.metricsCacheMs !== undefined ? { metricsCacheMs: opts.metricsCacheMs } : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const ops = await startAdminListener(app, { host: '127.0.0.1', port: 0, required: true, enabled: true }, DEFAULT_HTTP_LIMITS, log);
  // The simulator delivers its signed webhooks to this file's own API.
  const sim = await startSimulator({ port: 0, webhookUrl: `${baseUrl}/v1/webhooks/sim`, webhookSecret: webhookSecrets.sim[0] });

  const workers: Worker[] = [];
  const runs: Promise<void>[] = [];
  const nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  async function startWorker(identity?: string, versioned?: { deploymentName: string; buildId: string }): Promise<Worker> {
    const w = await createQueueWorker({
      connection: nativeConnection,
      namespace,
      taskQueue,
      pool,
      providerUrl: sim.url,
      fallbackProviderUrl: opts.fallbackProviderUrl,
      log,
      codeVersion: versioned?.buildId ?? 'test',
      deploymentName: versioned?.deploymentName,
      jobs: jobTypes,
      workflowBundle: await workflowBundle(jobTypes),
      identity,
      fastPathTypes: fastPath,
      payloadCodec: opts.payloadCodec,
    });
    workers.push(w);
    runs.push(w.run());
    return w;
  }
  for (let i = 0; i < (opts.workers ?? 1); i++) await startWorker(`${name}-worker-${i + 1}`);

  const h: Harness = {
    name,
    databaseUrl,
    pool,
    temporal,
    taskQueue,
    sim,
    jobs,
    baseUrl,
    opsUrl: ops!.url,
    log,
    workers,
    startWorker,
    async api(path, init = {}) {
      const headers: Record<string, string> = { ...init.headers };
      const tenant = init.tenant === undefined ? 'a' : init.tenant;
      if (tenant) headers.authorization ??= `Bearer ${TENANTS[tenant].key}`;
      let body: string | undefined = init.rawBody;
      if (init.body !== undefined) {
        body = JSON.stringify(init.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(baseUrl + path, { method: init.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: res.status, headers: res.headers, body: parsed };
    },
    submit(type, input, o = {}) {
      return h.api('/v1/jobs', {
        body: { type, input, ...(o.priority ? { priority: o.priority } : {}) },
        headers: { 'idempotency-key': o.key ?? `key-${uid()}` },
        tenant: o.tenant ?? 'a',
      });
    },
    async simEffects() {
      return (await fetch(`${sim.url}/__sim/effects`)).json();
    },
    async simFault(body) {
      const r = await fetch(`${sim.url}/__sim/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (r.status >= 300) throw new Error(`simulator refused fault ${JSON.stringify(body)}: ${r.status} ${await r.text()}`);
    },
    async waitForStatus(jobId, status, tenant = 'a', timeoutMs = 90_000) {
      const want = Array.isArray(status) ? status : [status];
      let last: unknown;
      return waitFor(
        () => `job ${jobId} to reach ${want.join('|')} (last: ${JSON.stringify(last)})`,
        async () => {
          const r = await h.api(`/v1/jobs/${jobId}`, { tenant });
          last = r.body?.status;
          return want.includes(r.body?.status) ? r.body : undefined;
        },
        timeoutMs,
      );
    },
    async waitForReplay(replayId, timeoutMs = 120_000) {
      let last: unknown;
      return waitFor(
        () => `replay ${replayId} to finish (last: ${JSON.stringify(last)})`,
        async () => {
          const r = await h.api(`/v1/dead-letters/replays/${replayId}`, {
            tenant: null,
            headers: { authorization: `Bearer ${ADMIN_KEY}` },
          });
          last = r.body?.state;
          return ['completed', 'stopped', 'halted'].includes(r.body?.state) ? r.body : undefined;
        },
        timeoutMs,
        500,
      );
    },
    async close() {
      await ops?.close();
      await app.close();
      await jobs.close();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(runs);
      await nativeConnection.close();
      await connection.close();
      await sim.close();
      await pool.end();
    },
  };
  return h;
}
