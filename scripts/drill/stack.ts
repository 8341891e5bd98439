import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { loadConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { buildApp } from '../../server/app.js';
import { startAdminListener } from '../../server/admin-listener.js';
import { DEFAULT_HTTP_LIMITS } from '../../lib/http-limits.js';
import { startSimulator, type Simulator } from '../../simulator/server.js';
import { freePort, startDevServer, type DevServer } from '../lib/dev-server.js';
import { startEmbeddedPostgres, type EmbeddedPg } from '../lib/embedded-pg.js';
import { resolveTemporalCli } from '../lib/temporal-cli.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { defaultPorts, resolveTemporalServerBinaries, startTemporalServer, type TemporalServer } from '../lib/temporal-server.js';
import { temporalServerEnv } from '../lib/temporal-server-env.js';
import { workerProcessEnv } from '../../lib/worker-allocator.js';
import { scriptServerSecret } from '../../lib/secret.js';

const WORKER_ENTRY = fileURLToPath(new URL('../../workers/main.ts', import.meta.url));

export const DRILL_TENANT = { id: 'drill', key: 'drill-api-key' };
/** The admin key of operator "drill" (ADMIN_API_KEYS): every drill action is audited under that name. */
export const DRILL_ADMIN_KEY = 'drill-operator-admin-key-0123456789abcdef';
export const DRILL_WEBHOOK_SECRET = `whsec_${Buffer.from('durable-jobs-drill-webhook-secret!').toString('base64')}`;

export interface DrillWorker {
  pid: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  output(): string;
  alive(): boolean;
}

/**
 * The stack a drill runs against: real Postgres, a persistent Temporal dev server (so it can
 * be restarted with its history), the simulator, the HTTP API and worker processes that can
 * be killed. With DATABASE_URL / TEMPORAL_ADDRESS / PROVIDER_URL the drill uses those instead,
 * and the items that need to restart a part it does not own say so.
 */
export interface DrillStack {
  pool: pg.Pool;
  databaseUrl: string;
  temporal: Client;
  temporalAddress: string;
  taskQueue: string;
  sim: Simulator | null;
  providerUrl: string;
  api: string;
  /** The API's admin listener: `/metrics` without a key (what Prometheus scrapes), `/openapi.json`, the detailed `/readyz`. */
  ops: string;
  jobs: JobsClient;
  log: Logger;
  ownsTemporal: boolean;
  /** `server`: temporal-server on Postgres (TEMPORAL_MODE=server); `dev`: the CLI dev server; `external`: TEMPORAL_ADDRESS. */
  temporalKind: 'dev' | 'server' | 'external';
  ownsPostgres: boolean;
  workers: DrillWorker[];
  spawnWorker(env?: Record<string, string>): Promise<DrillWorker>;
  /** Stops the dev server, keeps it down `downMs`, starts it again on the same file and port. */
  restartTemporal(downMs?: number): Promise<void>;
  /** temporal-server only: SIGKILL it (no graceful shutdown), keep it down `downMs`, start it again. */
  crashTemporal(downMs?: number): Promise<void>;
  restartPostgres(): Promise<void>;
  close(): Promise<void>;
}

export async function startDrillStack(say: (m: string) => void): Promise<DrillStack> {
  // Job IDs and key hashes derive from it; the worker processes get it in their environment.
  scriptServerSecret(process.env);
  const config = loadConfig(process.env, {
    jobTypes: defaultJobRegistry.names,
    fastPathTypes: defaultJobRegistry.fastPathTypes,
    mode: 'dev',
  });
  const log = createLogger('drill', process.env.DRILL_LOG_LEVEL ?? 'silent');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-drill-'));
  await chmod(dir, 0o755);
  const stops: Array<() => Promise<void>> = [
    async () => {
      await rm(dir, { recursive: true, force: true });
    },
  ];

  let pgServer: EmbeddedPg | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    pgServer = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: 0, persistent: false, log: () => undefined });
    stops.push(() => pgServer!.stop());
    databaseUrl = pgServer.url;
  }
  let dev: DevServer | null = null;
  let temporalAddress = config.temporalAddress;
  const devOptions = async () => ({
    cliPath: await resolveTemporalCli({ cliPath: config.temporalCliPath, log: say }),
    port: await freePort(),
    headless: true,
    dbFilename: path.join(dir, 'temporal.sqlite'),
    log: () => undefined,
  });
  // TEMPORAL_MODE=server: the production shape, temporal-server on the drill's Postgres.
  const temporalEnv = temporalServerEnv(process.env);
  let server: TemporalServer | null = null;
  if (!temporalAddress && temporalEnv.mode === 'server') {
    const binaries = await resolveTemporalServerBinaries({
      serverPath: temporalEnv.serverPath,
      sqlToolPath: temporalEnv.sqlToolPath,
      log: say,
    });
    server = await startTemporalServer({
      binaries,
      rootDir: path.join(dir, 'temporal-server'),
      databaseUrl,
      databases: temporalEnv.databases,
      ports: defaultPorts(0),
      namespace: config.temporalNamespace,
      retentionHours: 24,
      log: () => undefined,
    });
    temporalAddress = server.address;
  }
  const devOpts = temporalAddress ? null : await devOptions();
  if (devOpts) {
    dev = await startDevServer(devOpts);
    temporalAddress = dev.address;
  }
  stops.unshift(async () => {
    await dev?.stop();
    await server?.stop();
  });

  const pool = createPool(databaseUrl, log);
  const connection = await Connection.connect({ address: temporalAddress! });
  await prepareStack(pool, {
    tenants: [{ tenantId: DRILL_TENANT.id, apiKey: DRILL_TENANT.key }],
    temporal: { connection, namespace: config.temporalNamespace },
  });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const taskQueue = `drill-${Date.now().toString(36)}`;
  const jobs = createJobsClient({ jobs: defaultJobRegistry, pool, temporal, taskQueue });
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool,
    temporal,
    jobs,
    log,
    adminKeys: loadConfig({ ADMIN_API_KEYS: `drill=${DRILL_ADMIN_KEY}` }, { jobTypes: defaultJobRegistry.names, mode: 'production' })
      .adminKeys,
    webhookSecrets: { sim: [DRILL_WEBHOOK_SECRET] },
    version: config.codeVersion,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const api = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const opsListener = (await startAdminListener(
    app,
    { host: '127.0.0.1', port: 0, required: true, enabled: true },
    DEFAULT_HTTP_LIMITS,
    log,
  ))!;
  let sim: Simulator | null = null;
  let providerUrl = config.providerUrl;
  if (!providerUrl) {
    sim = await startSimulator({ port: 0, webhookUrl: `${api}/v1/webhooks/sim`, webhookSecret: DRILL_WEBHOOK_SECRET });
    providerUrl = sim.url;
  }

  const workers: DrillWorker[] = [];
  const stack: DrillStack = {
    pool,
    databaseUrl,
    temporal,
    temporalAddress: temporalAddress!,
    taskQueue,
    sim,
    providerUrl,
    api,
    ops: opsListener.url,
    jobs,
    log,
    ownsTemporal: dev !== null || server !== null,
    temporalKind: server ? 'server' : dev ? 'dev' : 'external',
    ownsPostgres: pgServer !== null,
    workers,
    async spawnWorker(env = {}) {
      const w = await spawnWorkerProcess({
        DATABASE_URL: databaseUrl!,
        TEMPORAL_ADDRESS: temporalAddress!,
        TEMPORAL_NAMESPACE: config.temporalNamespace,
        PROVIDER_URL: providerUrl!,
        TASK_QUEUE: taskQueue,
        LOG_LEVEL: 'info',
        ...env,
      });
      workers.push(w);
      return w;
    },
    async restartTemporal(downMs = 0) {
      if (server) {
        await server.stop();
        await new Promise((r) => setTimeout(r, downMs));
        await server.start();
        return;
      }
      if (!dev || !devOpts) throw new Error('the drill does not own this Temporal server (TEMPORAL_ADDRESS is set)');
      await dev.stop();
      await new Promise((r) => setTimeout(r, downMs));
      dev = await startDevServer({ ...devOpts, port: Number(temporalAddress!.split(':')[1]) });
    },
    async crashTemporal(downMs = 0) {
      if (!server) throw new Error('crashTemporal needs temporal-server (TEMPORAL_MODE=server)');
      await server.kill();
      await new Promise((r) => setTimeout(r, downMs));
      await server.start();
    },
    async restartPostgres() {
      if (!pgServer) throw new Error('the drill does not own this Postgres (DATABASE_URL is set)');
      await pgServer.restart();
    },
    async close() {
      await Promise.all(workers.map((w) => w.kill('SIGTERM')));
      await opsListener.close();
      await app.close();
      await jobs.close();
      await connection.close().catch(() => undefined);
      await sim?.close();
      await pool.end();
      for (const stop of stops) await stop().catch(() => undefined);
    },
  };
  return stack;
}

async function spawnWorkerProcess(env: Record<string, string>): Promise<DrillWorker> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', WORKER_ENTRY], {
    env: workerProcessEnv({ ...process.env, ...env }), // as `npm run worker` starts it
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-200_000);
  });
  child.stderr!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-200_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 90_000;
  while (!out.includes('worker polling')) {
    if (child.exitCode !== null) throw new Error(`worker exited early: ${out.slice(-1500)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('worker did not start within 90 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid!,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
