// The production shape on one machine: `temporal-server` (all four services in one process) on
// PostgreSQL, instead of the CLI's SQLite dev server. Used by `npm run temporal-server`,
// `TEMPORAL_MODE=server npm start`, the test setup and the drill. Facts it relies on are in
// ../shared/TEMPORAL-NOTES.md §13:
//  - binaries: `go install go.temporal.io/server/cmd/server@v1.32.1` (4-7 min cold) and
//    `.../cmd/tools/sql@v1.32.1` (seconds), resolved like the Temporal CLI (go-binary.ts);
//  - schemas: plugin postgres12, the main store and visibility in their own databases; the sql
//    tool embeds the versioned schemas (`--schema-name postgresql/v12/...`);
//  - `cluster_membership.rpc_port` is SMALLINT: membership ports must be <= 32767;
//  - the server creates no `default` namespace, and a just-registered search attribute is
//    unusable for ~2 s: we are ready only when a start that uses them has succeeded.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Connection, Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { JobStateKey, JobTypeKey, TenantIdKey, ensureSearchAttributes } from '../../lib/temporal.js';
import { signalGroup, trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import { resolveGoBinary, type GoBinarySpec } from './go-binary.js';
import {
  defaultPorts,
  fillPorts,
  PASSWORD_ENV,
  renderDynamicConfig,
  renderServerConfig,
  type TemporalServerPorts,
} from './temporal-server-config.js';
import { ensureTemporalSchemas, redact, sqlTargetFromUrl, type TemporalDatabases } from './temporal-server-schema.js';

export { defaultPorts, portsFromEnv, PORT_NAMES, type TemporalServerPorts } from './temporal-server-config.js';
export { ensureTemporalSchemas, sqlTargetFromUrl, type SqlTarget, type TemporalDatabases } from './temporal-server-schema.js';

/**
 * The production shape's server. v1.32.1 (issue 40 §1): the newest this machine's Go builds; the
 * local stack keeps the CLI v1.5.1 dev server (server 1.29.1), so the project runs on both.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.32.1';

const SERVER_SPEC: GoBinarySpec = {
  name: 'temporal-server',
  goPackage: 'go.temporal.io/server/cmd/server',
  version: TEMPORAL_SERVER_VERSION,
  cacheDir: 'temporal-server',
  envVar: 'TEMPORAL_SERVER_PATH',
  buildHint: 'about 4-7 minutes on 2 cores the first time',
};
const SQL_TOOL_SPEC: GoBinarySpec = {
  name: 'temporal-sql-tool',
  goPackage: 'go.temporal.io/server/cmd/tools/sql',
  version: TEMPORAL_SERVER_VERSION,
  cacheDir: 'temporal-server',
  envVar: 'TEMPORAL_SQL_TOOL_PATH',
  buildHint: 'seconds once temporal-server is built',
};

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
}

/** `temporal-server` first (the long build), then `temporal-sql-tool` (shares its Go build cache). */
export async function resolveTemporalServerBinaries(o: {
  serverPath?: string;
  sqlToolPath?: string;
  log: (m: string) => void;
  allowGoInstall?: boolean;
}): Promise<TemporalServerBinaries> {
  const server = await resolveGoBinary(SERVER_SPEC, { explicitPath: o.serverPath, log: o.log, allowGoInstall: o.allowGoInstall });
  const sqlTool = await resolveGoBinary(SQL_TOOL_SPEC, { explicitPath: o.sqlToolPath, log: o.log, allowGoInstall: o.allowGoInstall });
  return { server, sqlTool };
}

// ---------------------------------------------------------------------------------------------
// Process

export interface TemporalServerOptions {
  binaries: TemporalServerBinaries;
  /** Where the config, the dynamic config and the server log go (created). */
  rootDir: string;
  /** The stack's Postgres: embedded, or DATABASE_URL's server. */
  databaseUrl: string;
  /** Default temporal / temporal_visibility. */
  databases?: Partial<TemporalDatabases>;
  /** Default 127.0.0.1. */
  ip?: string;
  /** Default defaultPorts(7233); 0 entries are free ports. */
  ports?: TemporalServerPorts;
  /** Default `default`. */
  namespace?: string;
  /** Retention of closed workflows in the namespace, hours. Default 72. */
  retentionHours?: number;
  /** Number of history shards, fixed for the life of the databases. Default 4 (a laptop). */
  historyShards?: number;
  /** Server log level. Default warn. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Ready deadline for the process; default 90 s. */
  readyTimeoutMs?: number;
  log: (m: string) => void;
}

export interface TemporalServer {
  address: string;
  namespace: string;
  ports: TemporalServerPorts;
  pid(): number | undefined;
  /** SIGTERM (graceful), SIGKILL after 20 s. */
  stop(): Promise<void>;
  /** SIGKILL the server (a drill's crash), without restarting it. */
  kill(): Promise<void>;
  /** Start it again on the same databases and ports (after stop() or kill()). */
  start(): Promise<void>;
}

export async function startTemporalServer(o: TemporalServerOptions): Promise<TemporalServer> {
  const ip = o.ip ?? '127.0.0.1';
  const namespace = o.namespace ?? 'default';
  const databases: TemporalDatabases = { temporal: 'temporal', visibility: 'temporal_visibility', ...o.databases };
  const target = sqlTargetFromUrl(o.databaseUrl);
  const log = o.log;
  await fs.mkdir(path.join(o.rootDir, 'config'), { recursive: true, mode: 0o700 });
  await ensureTemporalSchemas({ sqlTool: o.binaries.sqlTool, target, databases, log });

  let ports = await fillPorts(o.ports ?? defaultPorts(), ip);
  const envName = 'durable-jobs';
  const dynamicConfigPath = path.join(o.rootDir, 'config', 'dynamicconfig.yaml');
  const writeConfig = async (): Promise<void> => {
    await fs.writeFile(
      path.join(o.rootDir, 'config', `${envName}.yaml`),
      renderServerConfig({
        target,
        databases,
        ip,
        ports,
        historyShards: o.historyShards ?? 4,
        logLevel: o.logLevel ?? 'warn',
        dynamicConfigPath,
      }),
      { mode: 0o600 },
    );
    await fs.writeFile(dynamicConfigPath, renderDynamicConfig(), { mode: 0o600 });
  };
  const address = () => `${ip}:${ports.frontend}`;
  const logFile = path.join(o.rootDir, 'temporal-server.log');

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let stopping = false;
  let ready = false;
  const tail: string[] = [];

  const spawnOnce = async (): Promise<void> => {
    await writeConfig();
    const started = Date.now();
    const args = ['--root', o.rootDir, '--config', 'config', '--env', envName, '--allow-no-auth', 'start'];
    const [cmd, cmdArgs] = withParentDeathSignal(o.binaries.server, args, 'TERM');
    const out = createWriteStream(logFile, { flags: 'a', mode: 0o600 });
    const c = spawn(cmd, cmdArgs, {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, [PASSWORD_ENV]: target.password },
    });
    child = c;
    trackChild(c, 'SIGTERM');
    stopping = false;
    ready = false;
    tail.length = 0;
    let exitInfo: string | null = null;
    const onData = (chunk: Buffer): void => {
      const text = redact(chunk.toString('utf8'), target.password);
      out.write(text);
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        tail.push(line);
        if (tail.length > 60) tail.shift();
        if (ready && !stopping && /"level":"(error|dpanic|panic|fatal)"/.test(line)) log(`[temporal-server] ${line.slice(0, 500)}`);
      }
    };
    c.stdout?.on('data', onData);
    c.stderr?.on('data', onData);
    exited = new Promise<void>((resolve) => {
      c.on('exit', (code, signal) => {
        untrackChild(c);
        exitInfo = `exited (code ${code ?? 'null'}, signal ${signal ?? 'null'})`;
        if (ready && !stopping) log(`temporal-server on ${address()} ${exitInfo} unexpectedly (log: ${logFile})`);
        out.end();
        resolve();
      });
    });
    c.on('error', (err) => {
      exitInfo = `could not be spawned: ${err.message}`;
    });
    try {
      await waitServing(address(), o.readyTimeoutMs ?? 90_000, () => exitInfo);
    } catch (err) {
      await stopChild();
      throw new Error(
        `temporal-server (${address()}) failed to start: ${(err as Error).message}\n${tail.slice(-20).join('\n')}\n(full log: ${logFile})`,
      );
    }
    await ensureNamespaceReady(address(), namespace, o.retentionHours ?? 72, log);
    ready = true;
    log(
      `temporal-server ${TEMPORAL_SERVER_VERSION} ready on ${address()} (namespace ${namespace}, Postgres ${target.host}:${target.port} databases ${databases.temporal} + ${databases.visibility}; ${((Date.now() - started) / 1000).toFixed(1)}s; log ${logFile})`,
    );
  };

  const stopChild = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    stopping = true;
    signalGroup(c, signal);
    const timer = setTimeout(() => signalGroup(c, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };

  // Ports picked as free can be taken before the server binds them (parallel test runs).
  const autoPorts = Object.values(o.ports ?? defaultPorts()).some((v) => v === 0);
  for (let attempt = 1; ; attempt++) {
    try {
      await spawnOnce();
      break;
    } catch (err) {
      if (!autoPorts || attempt >= 4 || !/address already in use|bind:/i.test(String(err))) throw err;
      log(`temporal-server: a port was taken, retrying on others`);
      ports = await fillPorts(o.ports ?? defaultPorts(), ip);
    }
  }

  return {
    get address() {
      return address();
    },
    namespace,
    get ports() {
      return ports;
    },
    pid: () => child?.pid,
    stop: () => stopChild('SIGTERM'),
    kill: () => stopChild('SIGKILL'),
    start: spawnOnce,
  };
}

/** The frontend answers: its gRPC health check and a describe of the system namespace. */
async function waitServing(address: string, timeoutMs: number, exitInfo: () => string | null): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = 'no answer yet';
  for (;;) {
    const gone = exitInfo();
    if (gone !== null) throw new Error(`the process ${gone}`);
    if (Date.now() > deadline) throw new Error(`not serving after ${timeoutMs / 1000}s: ${String(lastErr)}`);
    let conn: Connection | undefined;
    try {
      conn = await Connection.connect({ address, connectTimeout: '2s' });
      await conn.workflowService.describeNamespace({ namespace: 'temporal-system' });
      return;
    } catch (err) {
      lastErr = err;
      await sleep(300);
    } finally {
      await conn?.close().catch(() => undefined);
    }
  }
}

/**
 * Creates the namespace (with its retention) if missing, registers the search attributes,
 * then waits until a workflow start that sets all of them succeeds: only then can intake
 * really accept a job. The probe run is on a task queue no worker polls and is terminated at once.
 */
export async function ensureNamespaceReady(
  address: string,
  namespace: string,
  retentionHours: number,
  log: (m: string) => void,
  timeoutMs = 60_000,
): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: '5s' });
  try {
    const exists = await connection.workflowService.describeNamespace({ namespace }).then(
      () => true,
      (err: { code?: number }) => {
        if (err.code === 5) return false; // NOT_FOUND
        throw err;
      },
    );
    if (!exists) {
      try {
        await connection.workflowService.registerNamespace({
          namespace,
          workflowExecutionRetentionPeriod: msToTs(retentionHours * 3_600_000),
        });
        log(`created namespace ${namespace} (retention ${retentionHours} h)`);
      } catch (err) {
        if ((err as { code?: number }).code !== 6) throw err; // ALREADY_EXISTS: another process won the race
      }
    }
    const deadline = Date.now() + timeoutMs;
    let added: string[] | null = null;
    while (added === null) {
      try {
        added = await ensureSearchAttributes(connection, namespace);
      } catch (err) {
        // A namespace just registered is unknown to the frontend until its registry refreshes.
        if (Date.now() > deadline) throw err;
        await sleep(500);
      }
    }
    if (added.length > 0) log(`registered search attributes ${added.join(', ')} on namespace ${namespace}`);
    const client = new Client({ connection, namespace });
    const started = Date.now();
    let lastErr: unknown;
    for (;;) {
      const workflowId = `durable-jobs-readiness-probe-${randomUUID()}`;
      try {
        const h = await client.workflow.start('durableJobsReadinessProbe', {
          taskQueue: 'durable-jobs-readiness-probe',
          workflowId,
          workflowRunTimeout: '1 minute',
          typedSearchAttributes: [
            { key: TenantIdKey, value: 'probe' },
            { key: JobTypeKey, value: 'probe' },
            { key: JobStateKey, value: 'probe' },
          ],
        });
        await h.terminate('readiness probe').catch(() => undefined);
        if (Date.now() - started > 1_000) log(`search attributes usable after ${((Date.now() - started) / 1000).toFixed(1)}s`);
        return;
      } catch (err) {
        lastErr = err;
        if (Date.now() > deadline)
          throw new Error(
            `a workflow start with the search attributes still fails after ${timeoutMs / 1000}s: ${(lastErr as Error).message}`,
          );
        await sleep(250);
      }
    }
  } finally {
    await connection.close().catch(() => undefined);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
