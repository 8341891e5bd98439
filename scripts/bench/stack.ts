// The one local stack every measurement runs against: Postgres (embedded, durable settings
// like `npm start`, unless DATABASE_URL), the Temporal dev server (file-backed, tuned SQLite like
// `npm start`, unless TEMPORAL_ADDRESS), a fresh migrated database, the provider simulator,
// and helpers to start the product's and the baseline's workers and the HTTP API.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import pg from 'pg';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { loadConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { buildApp } from '../../server/app.js';
import { startSimulator, type Simulator } from '../../simulator/server.js';
import { bundleWorkflows, createQueueWorker, withWorkflowSourceMap } from '../../workers/worker.js';
import { scriptServerSecret } from '../../lib/secret.js';
import type { ConcurrencyLimits, JobType } from '../../contract/job-types.js';
import type { FastifyInstance } from 'fastify';
import { startDevServer } from '../lib/dev-server.js';
import { startEmbeddedPostgres } from '../lib/embedded-pg.js';
import { resolveTemporalCli } from '../lib/temporal-cli.js';
import { defaultPorts, resolveTemporalServerBinaries, startTemporalServer, TEMPORAL_SERVER_VERSION } from '../lib/temporal-server.js';
import { createBareActivities, type BareCounter } from './bare-activities.js';
import { startChild, type Child } from './child.js';
import { parentPid, pidListeningOn } from './cpu.js';
import type { ChildSettings } from './worker-child.js';
import { defaultJobRegistry } from '../../jobs/index.js';

export const TENANT = { id: 'bench-tenant', key: 'bench-tenant-key-0001' } as const;
export const ADMIN_KEY = 'bench-admin-key-0123456789abcdef0123';
/** Same as createQueueWorker's default: the product and the baseline run with equal worker settings. */
export const ACTIVITY_SLOTS = 50;
/**
 * Concurrency caps raised out of the way for throughput and memory: those figures measure the
 * engine and the bookkeeping, not the cap (the replay measurement covers a cap). Above anything
 * the bench runs at once (the memory section: 1,000 jobs), and no higher: a cap is that many
 * slot rows per scope (store/concurrency.ts), created at the scope's first use in each process.
 */
export const RAISED_LIMITS = Object.fromEntries(defaultJobRegistry.names.map((t) => [t, { perTenant: 2_000, global: 2_000 }])) as Record<
  JobType,
  ConcurrencyLimits
>;
const BARE_WORKFLOWS_PATH = fileURLToPath(new URL('./bare-workflows.ts', import.meta.url));

export const uid = (): string => randomBytes(5).toString('hex');

export interface RunningWorker {
  worker: Worker;
  stop(): Promise<void>;
}

export type TemporalKind = 'dev' | 'production';

export interface BenchStack {
  quick: boolean;
  /** `dev`: the CLI dev server (SQLite file); `production`: temporal-server on the stack's Postgres. */
  temporalKind: TemporalKind;
  /** One line saying which Temporal this is and with which settings. */
  temporalDescription: string;
  /** The databases temporal-server keeps on the stack's Postgres (production kind only). */
  temporalDatabases: string[];
  log: (msg: string) => void;
  /** Admin connection string of the server (database `postgres` or the one given). */
  serverUrl: string;
  databaseUrl: string;
  pool: pg.Pool;
  temporal: Client;
  temporalAddress: string;
  namespace: string;
  nativeConnection: NativeConnection;
  cliPath: string | null;
  sim: Simulator;
  embeddedPg: boolean;
  embeddedTemporal: boolean;
  productBundle(): Promise<WorkflowBundleOption>;
  bareBundle(): Promise<WorkflowBundleOption>;
  /** Writes a bundle to a file (child-process workers load it instead of bundling: webpack would inflate their RSS). */
  bundleFile(kind: 'product' | 'bare'): Promise<string>;
  /** The client library; `fastPath`: the types whose jobs it starts on the fast path (`FAST_PATH_JOB_TYPES`). */
  jobsClient(taskQueue: string, pool?: pg.Pool, fastPath?: ReadonlySet<string>): JobsClient;
  /** The HTTP API in this process; `setup` may add bench-only routes to the same Fastify instance before it listens. */
  startApp(
    taskQueue: string,
    o?: { pool?: pg.Pool; temporal?: Client; setup?: (app: FastifyInstance) => void },
  ): Promise<{ baseUrl: string; jobs: JobsClient; close(): Promise<void> }>;
  /** A worker in a process of its own (CPU seconds and Postgres round trips counted apart). */
  startWorkerChild(
    kind: ChildSettings['kind'],
    taskQueue: string,
    o?: {
      databaseUrl?: string;
      activitySlots?: number;
      limits?: Record<JobType, ConcurrencyLimits>;
      payloadCodecKeys?: string;
      tracingEndpoint?: string;
      /** A bundle file of its own (the tracing section's, with the workflow interceptors). Default `bundleFile(kind)`. */
      bundlePath?: string;
    },
  ): Promise<Child>;
  /** Process IDs for CPU accounting: this process (API, submitters), Postgres's postmaster, the Temporal server. */
  pids(): Promise<{ bench: number; postgres?: number; temporal?: number }>;
  startProductWorker(
    taskQueue: string,
    o?: { limits?: Record<JobType, ConcurrencyLimits>; connection?: NativeConnection; databaseUrl?: string },
  ): Promise<RunningWorker>;
  startBareWorker(
    taskQueue: string,
    o?: { connection?: NativeConnection; namespace?: string },
  ): Promise<RunningWorker & { counter: BareCounter }>;
  /** A fresh migrated database (with the bench tenant) on the same server. */
  createDatabase(name: string): Promise<string>;
  simFault(body: Record<string, unknown>): Promise<void>;
  simEffects(): Promise<{ totalApplied: number; peakInFlight: number }>;
  simReset(): Promise<void>;
  tmpDir: string;
  silentLogger: Logger;
  stop(): Promise<void>;
}

export async function startStack(o: { quick: boolean; log: (msg: string) => void; temporal?: TemporalKind }): Promise<BenchStack> {
  const temporalKind = o.temporal ?? 'dev';
  const { log } = o;
  // The SDK's own lines (worker state changes) would drown the report.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  // Job IDs and key hashes derive from it; the worker children get it in their environment.
  scriptServerSecret(process.env);
  const config = loadConfig(process.env, { jobTypes: defaultJobRegistry.names, fastPathTypes: defaultJobRegistry.fastPathTypes });
  const closers: Array<() => Promise<unknown>> = [];
  const tmpDir = await fs.mkdtemp(path.join(os.tmpdir(), 'durable-jobs-bench-'));
  await fs.chmod(tmpDir, 0o755); // postgres runs as `postgres` when we are root
  closers.push(() => fs.rm(tmpDir, { recursive: true, force: true }));
  const stop = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c().catch((e: Error) => log(`cleanup: ${e.message}`));
  };
  try {
    const cliPath = await resolveTemporalCli({
      cliPath: config.temporalCliPath,
      log,
      allowGoInstall: config.temporalAddress === undefined,
    });
    const startPg = async (): Promise<string> => {
      if (config.databaseUrl) return config.databaseUrl;
      // Durable settings (fsync, synchronous_commit on), as `npm start` runs it: the commit rate is real.
      const epg = await startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'pg'), port: 0, persistent: true, log: () => undefined });
      closers.push(() => epg.stop());
      return epg.url;
    };
    let temporalPid: () => number | undefined = () => undefined;
    let temporalDatabases: string[] = [];
    let temporalDescription = config.temporalAddress ? `Temporal at ${config.temporalAddress}` : '';
    const startProduction = async (pgUrl: string): Promise<string> => {
      const binaries = await resolveTemporalServerBinaries({ log, allowGoInstall: true });
      const dbs = { temporal: `temporal_bench_${uid()}`, visibility: `temporal_vis_bench_${uid()}` };
      temporalDatabases = [dbs.temporal, dbs.visibility];
      if (config.databaseUrl) closers.push(() => dropDatabases(pgUrl, temporalDatabases));
      const server = await startTemporalServer({
        binaries,
        rootDir: path.join(tmpDir, 'temporal-server'),
        databaseUrl: pgUrl,
        databases: dbs,
        ports: defaultPorts(0),
        namespace: config.temporalNamespace,
        retentionHours: 24,
        log: () => undefined,
      });
      closers.push(() => server.stop());
      temporalPid = () => server.pid();
      temporalDescription = `temporal-server ${TEMPORAL_SERVER_VERSION} (production shape: 4 history shards, Postgres persistence and visibility on the stack's Postgres, scripts/lib/temporal-server-config.ts)`;
      return server.address;
    };
    const startTemporal = async (): Promise<string> => {
      if (config.temporalAddress) return config.temporalAddress;
      temporalDescription = 'Temporal dev server (CLI) with a tuned SQLite file (WAL, synchronous=NORMAL) and DEV_SERVER_DYNAMIC_CONFIG';
      const dev = await startDevServer({
        cliPath,
        port: 0,
        headless: true,
        dbFilename: path.join(tmpDir, 'temporal.sqlite'),
        namespace: config.temporalNamespace,
        log: () => undefined,
      });
      closers.push(() => dev.stop());
      return dev.address;
    };
    let serverUrl: string;
    let temporalAddress: string;
    if (temporalKind === 'production' && !config.temporalAddress) {
      serverUrl = await startPg();
      temporalAddress = await startProduction(serverUrl);
    } else [serverUrl, temporalAddress] = await Promise.all([startPg(), startTemporal()]);
    log(
      `stack: ${config.databaseUrl ? 'Postgres from DATABASE_URL' : 'embedded Postgres (durable settings)'}, ` + `${temporalDescription}`,
    );

    const silentLogger = createLogger('bench', 'silent');
    const createDatabase = async (name: string): Promise<string> => {
      const db = `dj_bench_${name}_${uid()}`;
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${db}`);
      } finally {
        await admin.end();
      }
      closers.push(async () => {
        const a = new pg.Client({ connectionString: serverUrl });
        await a.connect();
        try {
          await a.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
        } finally {
          await a.end();
        }
      });
      const url = new URL(serverUrl);
      url.pathname = `/${db}`;
      const p = createPool(url.toString(), silentLogger, 2);
      try {
        await prepareStack(p, { tenants: [{ tenantId: TENANT.id, apiKey: TENANT.key }] });
      } finally {
        await p.end();
      }
      return url.toString();
    };
    const databaseUrl = await createDatabase('main');
    const benchPool = createPool(databaseUrl, silentLogger, 20);
    closers.push(() => benchPool.end());

    const connection = await Connection.connect({ address: temporalAddress });
    closers.push(() => connection.close());
    const temporal = new Client({ connection, namespace: config.temporalNamespace });
    const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
    closers.push(() => nativeConnection.close());
    // `generic`: the example section's upstream paths (/v1/payments, /v1/emails) are a team's own.
    const sim = await startSimulator({ port: 0, generic: true });
    closers.push(() => sim.close());

    let productBundle: Promise<WorkflowBundleOption> | undefined;
    let bareBundle: Promise<WorkflowBundleOption> | undefined;
    const bundles = {
      product: () => (productBundle ??= bundleWorkflows()),
      // The baselines' bundle gets the product's source-map setting too: what they are compared
      // on is what each bundle holds, not how the product chose to bundle it.
      bare: () =>
        (bareBundle ??= bundleWorkflowCode({
          workflowsPath: BARE_WORKFLOWS_PATH,
          logger: quietLogger,
          webpackConfigHook: withWorkflowSourceMap,
        }).then(({ code }) => ({ code }))),
    };
    const jobsClient = (taskQueue: string, p = benchPool, fastPath?: ReadonlySet<string>): JobsClient =>
      createJobsClient({ jobs: defaultJobRegistry, pool: p, temporal, taskQueue, ...(fastPath ? { fastPath } : {}) });

    let postgresPid: number | undefined;
    const stack: BenchStack = {
      quick: o.quick,
      temporalKind,
      temporalDescription,
      temporalDatabases,
      log,
      serverUrl,
      databaseUrl,
      pool: benchPool,
      temporal,
      temporalAddress,
      namespace: config.temporalNamespace,
      nativeConnection,
      cliPath,
      sim,
      embeddedPg: !config.databaseUrl,
      embeddedTemporal: !config.temporalAddress,
      tmpDir,
      silentLogger,
      stop,
      productBundle: bundles.product,
      bareBundle: bundles.bare,
      async bundleFile(kind) {
        const file = path.join(tmpDir, `${kind}-bundle.js`);
        if (
          await fs.stat(file).then(
            () => true,
            () => false,
          )
        )
          return file;
        const b = (await bundles[kind]()) as { code: string };
        await fs.writeFile(file, b.code);
        return file;
      },
      jobsClient,
      async pids() {
        if (postgresPid === undefined) {
          const r = await benchPool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          postgresPid = parentPid(r.rows[0]!.pid);
        }
        const port = Number(temporalAddress.split(':').at(-1));
        return { bench: process.pid, postgres: postgresPid, temporal: temporalPid() ?? pidListeningOn(port) };
      },
      async startWorkerChild(kind, taskQueue, w = {}) {
        return startChild(stack, {
          kind,
          temporalAddress,
          namespace: config.temporalNamespace,
          taskQueue,
          bundlePath: w.bundlePath ?? (await stack.bundleFile(kind)),
          activitySlots: w.activitySlots ?? ACTIVITY_SLOTS,
          databaseUrl: w.databaseUrl ?? databaseUrl,
          providerUrl: sim.url,
          limits: w.limits ?? RAISED_LIMITS,
          ...(w.payloadCodecKeys ? { payloadCodecKeys: w.payloadCodecKeys } : {}),
          ...(w.tracingEndpoint ? { tracingEndpoint: w.tracingEndpoint } : {}),
        });
      },
      async startApp(taskQueue, a = {}) {
        const appPool = a.pool ?? benchPool;
        const appTemporal = a.temporal ?? temporal;
        const jobs = createJobsClient({ jobs: defaultJobRegistry, pool: appPool, temporal: appTemporal, taskQueue });
        const app = buildApp({
          jobTypes: defaultJobRegistry,
          pool: appPool,
          temporal: appTemporal,
          jobs,
          log: silentLogger,
          adminApiKey: ADMIN_KEY,
          version: 'bench',
          webhookSecrets: {},
          taskQueue,
        });
        a.setup?.(app as unknown as FastifyInstance);
        await app.listen({ port: 0, host: '127.0.0.1' });
        const addr = app.server.address();
        return {
          baseUrl: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`,
          jobs,
          close: () => app.close().then(() => jobs.close()),
        };
      },
      async startProductWorker(taskQueue, w = {}) {
        const workerPool = createPool(w.databaseUrl ?? databaseUrl, silentLogger); // production's default pool size
        const worker = await createQueueWorker({
          connection: w.connection ?? nativeConnection,
          namespace: config.temporalNamespace,
          taskQueue,
          pool: workerPool,
          providerUrl: sim.url,
          log: silentLogger,
          codeVersion: 'bench',
          concurrencyLimits: w.limits ?? RAISED_LIMITS,
          workflowBundle: await bundles.product(),
          maxConcurrentActivityTaskExecutions: ACTIVITY_SLOTS,
          identity: `bench-${process.pid}-${taskQueue}`, // createQueueWorker passes it on even when undefined, which the native bridge refuses
        });
        return runWorker(worker, () => workerPool.end());
      },
      async startBareWorker(taskQueue, w = {}) {
        const counter: BareCounter = { inFlight: 0, peak: 0, completed: 0 };
        const worker = await Worker.create({
          connection: w.connection ?? nativeConnection,
          namespace: w.namespace ?? config.temporalNamespace,
          taskQueue,
          workflowBundle: await bundles.bare(),
          activities: createBareActivities(counter),
          maxConcurrentActivityTaskExecutions: ACTIVITY_SLOTS,
          shutdownGraceTime: '10s',
        });
        return { ...runWorker(worker), counter };
      },
      createDatabase,
      async simFault(body) {
        const r = await fetch(`${sim.url}/__sim/faults`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (r.status >= 300) throw new Error(`simulator refused fault ${JSON.stringify(body)}: ${r.status} ${await r.text()}`);
      },
      async simEffects() {
        return (await (await fetch(`${sim.url}/__sim/effects`)).json()) as { totalApplied: number; peakInFlight: number };
      },
      async simReset() {
        const r = await fetch(`${sim.url}/__sim/reset`, { method: 'POST' });
        if (r.status >= 300) throw new Error(`simulator reset failed: ${r.status}`);
      },
    };
    return stack;
  } catch (err) {
    await stop();
    throw err;
  }
}

async function dropDatabases(url: string, names: string[]): Promise<void> {
  const a = new pg.Client({ connectionString: url });
  await a.connect();
  try {
    for (const n of names) await a.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
  } finally {
    await a.end();
  }
}

function runWorker(worker: Worker, after?: () => Promise<void>): RunningWorker {
  const run = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    worker,
    stop: () =>
      (stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await run.catch(() => undefined);
        await after?.();
      })()),
  };
}

const noop = (): undefined => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };
