// The production shape on one machine: `temporal-server` (all four services in one process) on
// PostgreSQL, instead of the CLI's SQLite dev server. Used by `npm run temporal-server`,
// `TEMPORAL_MODE=server npm start`, the test setup and the drill. Facts it relies on are in
// ../shared/TEMPORAL-NOTES.md §13:
//  - binaries: `go install go.temporal.io/server/cmd/server@v1.29.1` (3-4 min cold) and
//    `.../cmd/tools/sql@v1.29.1` (seconds), resolved like the Temporal CLI (go-binary.ts);
//  - schemas: plugin postgres12, the main store and visibility in their own databases; the sql
//    tool embeds the versioned schemas (`--schema-name postgresql/v12/...`);
//  - `cluster_membership.rpc_port` is SMALLINT: membership ports must be <= 32767;
//  - the server creates no `default` namespace, and a just-registered search attribute is
//    unusable for ~2 s: we are ready only when a start that uses them has succeeded.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { Connection, Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import pg from 'pg';
import { JobStateKey, JobTypeKey, TenantIdKey, ensureSearchAttributes } from '../../lib/temporal.js';
import { signalGroup, trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import { DEV_SERVER_DYNAMIC_CONFIG } from './dev-server.js';
import { resolveGoBinary, type GoBinarySpec } from './go-binary.js';

export const TEMPORAL_SERVER_VERSION = 'v1.29.1';

const SERVER_SPEC: GoBinarySpec = {
  name: 'temporal-server', goPackage: 'go.temporal.io/server/cmd/server', version: TEMPORAL_SERVER_VERSION,
  cacheDir: 'temporal-server', envVar: 'TEMPORAL_SERVER_PATH', buildHint: 'about 3-4 minutes on 2 cores the first time',
};
const SQL_TOOL_SPEC: GoBinarySpec = {
  name: 'temporal-sql-tool', goPackage: 'go.temporal.io/server/cmd/tools/sql', version: TEMPORAL_SERVER_VERSION,
  cacheDir: 'temporal-server', envVar: 'TEMPORAL_SQL_TOOL_PATH', buildHint: 'seconds once temporal-server is built',
};

export interface TemporalServerBinaries { server: string; sqlTool: string }

/** `temporal-server` first (the long build), then `temporal-sql-tool` (shares its Go build cache). */
export async function resolveTemporalServerBinaries(o: { serverPath?: string; sqlToolPath?: string; log: (m: string) => void; allowGoInstall?: boolean }): Promise<TemporalServerBinaries> {
  const server = await resolveGoBinary(SERVER_SPEC, { explicitPath: o.serverPath, log: o.log, allowGoInstall: o.allowGoInstall });
  const sqlTool = await resolveGoBinary(SQL_TOOL_SPEC, { explicitPath: o.sqlToolPath, log: o.log, allowGoInstall: o.allowGoInstall });
  return { server, sqlTool };
}

// ---------------------------------------------------------------------------------------------
// Ports

/** Every listener of the all-in-one process. 0 = a free port (membership ports: one <= 32767). */
export interface TemporalServerPorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
  /** Prometheus metrics; undefined = no metrics listener. */
  metrics?: number;
}

export const PORT_NAMES = ['frontend', 'frontend-http', 'frontend-membership', 'history', 'history-membership', 'matching', 'matching-membership', 'worker', 'worker-membership', 'metrics'] as const;
const camel = (k: string) => k.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as keyof TemporalServerPorts;

/** The layout of the server's sample config, shifted with the frontend port (7233 → 7234, 7235, 7239, 6933...). */
export function defaultPorts(frontend = 7233): TemporalServerPorts {
  if (frontend === 0) return { frontend: 0, frontendHttp: 0, frontendMembership: 0, history: 0, historyMembership: 0, matching: 0, matchingMembership: 0, worker: 0, workerMembership: 0 };
  const d = frontend - 7233;
  return {
    frontend, frontendHttp: 7243 + d, frontendMembership: 6933 + d, history: 7234 + d, historyMembership: 6934 + d,
    matching: 7235 + d, matchingMembership: 6935 + d, worker: 7239 + d, workerMembership: 6939 + d,
  };
}

/**
 * `TEMPORAL_SERVER_PORT` (frontend gRPC, default 7233) shifts the whole layout;
 * `TEMPORAL_SERVER_PORTS="history=7300,metrics=9090,..."` overrides single ports.
 */
export function portsFromEnv(env: NodeJS.ProcessEnv): TemporalServerPorts {
  const frontend = env.TEMPORAL_SERVER_PORT ? parsePort('TEMPORAL_SERVER_PORT', env.TEMPORAL_SERVER_PORT) : 7233;
  const ports = defaultPorts(frontend);
  for (const entry of (env.TEMPORAL_SERVER_PORTS ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const [k, v, extra] = entry.split('=');
    if (!k || v === undefined || extra !== undefined || !(PORT_NAMES as readonly string[]).includes(k)) {
      throw new Error(`TEMPORAL_SERVER_PORTS: "${entry}" is not name=port with a name of ${PORT_NAMES.join(', ')}`);
    }
    ports[camel(k)] = parsePort(`TEMPORAL_SERVER_PORTS ${k}`, v);
  }
  for (const k of ['frontendMembership', 'historyMembership', 'matchingMembership', 'workerMembership'] as const) {
    if (ports[k] > 32767) throw new Error(`${k} port ${ports[k]} is above 32767: Temporal stores membership ports in a SMALLINT column`);
  }
  return ports;
}

function parsePort(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${name} must be a port number (1-65535), got "${v}"`);
  return n;
}

async function freePort(ip: string, max = 65535): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const want = max >= 65535 ? 0 : 20_000 + Math.floor(Math.random() * (max - 20_000));
    const got = await new Promise<number | null>((resolve) => {
      const srv = net.createServer();
      srv.unref();
      srv.on('error', () => resolve(null));
      srv.listen(want, ip, () => {
        const a = srv.address();
        srv.close(() => resolve(typeof a === 'object' && a ? a.port : null));
      });
    });
    if (got !== null && got <= max) return got;
  }
  throw new Error(`no free port on ${ip} at or below ${max}`);
}

async function fillPorts(p: TemporalServerPorts, ip: string): Promise<TemporalServerPorts> {
  const out = { ...p };
  const taken = new Set<number>();
  for (const k of Object.keys(out) as (keyof TemporalServerPorts)[]) {
    if (out[k] !== 0) continue;
    let port: number;
    do port = await freePort(ip, k.endsWith('Membership') ? 32767 : 65535);
    while (taken.has(port));
    taken.add(port);
    out[k] = port;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Databases

export interface SqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Database to connect to for CREATE/ALTER DATABASE (the one DATABASE_URL names). */
  maintenanceDb: string;
  /** sslmode=require|verify-ca|verify-full in DATABASE_URL. */
  tls: boolean;
  verifyHost: boolean;
}

export function sqlTargetFromUrl(databaseUrl: string): SqlTarget {
  const u = new URL(databaseUrl);
  const sslmode = u.searchParams.get('sslmode') ?? '';
  return {
    host: u.hostname || '127.0.0.1', port: Number(u.port || 5432),
    user: decodeURIComponent(u.username || 'postgres'), password: decodeURIComponent(u.password),
    maintenanceDb: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
    tls: ['require', 'verify-ca', 'verify-full'].includes(sslmode), verifyHost: sslmode === 'verify-full',
  };
}

/** What `update-schema` reaches with the schemas embedded in the v1.29.1 sql tool. */
const SCHEMAS = {
  temporal: { schemaName: 'postgresql/v12/temporal', version: '1.18' },
  visibility: { schemaName: 'postgresql/v12/visibility', version: '1.9' },
} as const;

export interface TemporalDatabases { temporal: string; visibility: string }

/**
 * Creates and migrates both databases, idempotently. A database that does not exist yet is
 * built under a staging name and renamed when complete (ALTER DATABASE ... RENAME is atomic),
 * so an interrupted first setup never leaves a half-written schema under the real name: the
 * next run drops the staging database and starts over. An existing database is only moved
 * forward (`update-schema` applies the versions it lacks). An advisory lock serialises two
 * setups against one Postgres.
 */
export async function ensureTemporalSchemas(o: { sqlTool: string; target: SqlTarget; databases: TemporalDatabases; log: (m: string) => void }): Promise<void> {
  const { target, log } = o;
  const admin = new pg.Client({ host: target.host, port: target.port, user: target.user, password: target.password, database: target.maintenanceDb, ssl: target.tls ? { rejectUnauthorized: target.verifyHost } : undefined });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    await admin.query(`SELECT pg_advisory_lock(hashtext('durable-jobs: temporal schema setup'))`);
    for (const kind of ['temporal', 'visibility'] as const) {
      const db = o.databases[kind];
      const want = SCHEMAS[kind];
      const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db])).rowCount === 1;
      if (exists) {
        const have = await schemaVersion(target, db);
        if (have === null && (await tableCount(target, db)) > 0) {
          throw new Error(`database ${db} has tables but no Temporal schema version: it is not a Temporal ${kind} store (or an interrupted in-place setup); drop it or choose another database name`);
        }
        if (have === want.version) {
          log(`Temporal ${kind} schema: database ${db} is at version ${have}`);
          continue;
        }
        log(`Temporal ${kind} schema: database ${db} is at version ${have ?? 'none'}; updating to ${want.version}`);
        await runSqlTool(o.sqlTool, target, db, ['setup-schema', '-v', '0.0']);
        await runSqlTool(o.sqlTool, target, db, ['update-schema', '--schema-name', want.schemaName]);
      } else {
        const staging = `${db}__setup`;
        const started = Date.now();
        await admin.query(`DROP DATABASE IF EXISTS ${ident(staging)} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${ident(staging)}`);
        await runSqlTool(o.sqlTool, target, staging, ['setup-schema', '-v', '0.0']);
        await runSqlTool(o.sqlTool, target, staging, ['update-schema', '--schema-name', want.schemaName]);
        // The tool records the database it ran in; the server checks the record under its own name.
        await renameSchemaRecord(target, staging, db);
        await admin.query(`ALTER DATABASE ${ident(staging)} RENAME TO ${ident(db)}`);
        log(`Temporal ${kind} schema: created database ${db} at version ${want.version} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
      }
      const now = await schemaVersion(target, db);
      if (now !== want.version) throw new Error(`Temporal ${kind} schema in ${db} is at version ${now ?? 'none'} after the update, expected ${want.version}`);
    }
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function schemaVersion(t: SqlTarget, db: string): Promise<string | null> {
  const c = new pg.Client({ host: t.host, port: t.port, user: t.user, password: t.password, database: db, ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const r = await c.query<{ v: string }>(`SELECT curr_version AS v FROM schema_version WHERE version_partition = 0 AND db_name = $1`, [db]);
    return r.rows[0]?.v ?? null;
  } catch {
    return null; // no schema_version table: nothing set up yet
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function tableCount(t: SqlTarget, db: string): Promise<number> {
  const c = new pg.Client({ host: t.host, port: t.port, user: t.user, password: t.password, database: db, ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).rows[0]!.n;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function renameSchemaRecord(t: SqlTarget, staging: string, db: string): Promise<void> {
  const c = new pg.Client({ host: t.host, port: t.port, user: t.user, password: t.password, database: staging, ssl: t.tls ? { rejectUnauthorized: t.verifyHost } : undefined });
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query('UPDATE schema_version SET db_name = $1 WHERE db_name = $2', [db, staging]);
  } finally {
    await c.end().catch(() => undefined);
  }
}

function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`database name "${name}" must be lower-case letters, digits and _`);
  return `"${name}"`;
}

/**
 * One sql-tool call. It runs in its own process group and without a parent-death signal: a
 * Ctrl-C or the death of this process lets the current call finish on its own (seconds),
 * rather than cutting a schema version in half. The password goes through SQL_PASSWORD, never argv.
 */
function runSqlTool(tool: string, t: SqlTarget, db: string, args: string[]): Promise<void> {
  const global = ['--plugin', 'postgres12', '--ep', t.host, '-p', String(t.port), '-u', t.user, '--db', db];
  if (t.tls) global.push('--tls', ...(t.verifyHost ? [] : ['--tls-disable-host-verification']));
  return new Promise((resolve, reject) => {
    execFile(tool, [...global, ...args], { env: { ...process.env, SQL_PASSWORD: t.password }, timeout: 120_000, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      if (!err) return resolve();
      const lines = redact(`${stdout}\n${stderr}`, t.password).trim().split('\n');
      const errors = lines.filter((l) => /ERROR|FATAL|error:/.test(l));
      const out = (errors.length > 0 ? errors : lines).slice(-8).join('\n');
      reject(new Error(`temporal-sql-tool ${args[0]} on database ${db} failed: ${out}`));
    });
  });
}

/**
 * Hides a database password in output we print or keep. The embedded cluster's fixed password
 * `postgres` is no secret, and hiding it would mangle every `postgresql` in the output.
 */
function redact(text: string, secret: string): string {
  return secret && secret !== 'postgres' ? text.split(secret).join('***') : text;
}

// ---------------------------------------------------------------------------------------------
// Config

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

const PASSWORD_ENV = 'DURABLE_JOBS_TEMPORAL_SQL_PASSWORD';

/**
 * The config is a template (`# enable-template`, rendered by the server with sprig): the
 * database password is read from the environment, so it is never written to disk.
 */
export function renderServerConfig(o: { target: SqlTarget; databases: TemporalDatabases; ip: string; ports: TemporalServerPorts; historyShards: number; logLevel: string; dynamicConfigPath: string }): string {
  const { target: t, ports: p, ip } = o;
  const store = (db: string, maxConns: number): string[] => [
    '      sql:',
    '        pluginName: "postgres12"',
    `        databaseName: ${JSON.stringify(db)}`,
    `        connectAddr: ${JSON.stringify(`${t.host}:${t.port}`)}`,
    '        connectProtocol: "tcp"',
    `        user: ${JSON.stringify(t.user)}`,
    `        password: {{ env "${PASSWORD_ENV}" | quote }}`,
    `        maxConns: ${maxConns}`,
    `        maxIdleConns: ${maxConns}`,
    '        maxConnLifetime: "1h"',
    ...(t.tls ? ['        tls:', '          enabled: true', `          enableHostVerification: ${t.verifyHost}`] : []),
  ];
  const service = (name: string, grpc: number, membership: number, http?: number): string[] => [
    `  ${name}:`,
    '    rpc:',
    `      grpcPort: ${grpc}`,
    `      membershipPort: ${membership}`,
    `      bindOnIP: ${JSON.stringify(ip)}`,
    ...(http ? [`      httpPort: ${http}`] : []),
  ];
  return [
    '# enable-template',
    '# Written by durable-jobs (scripts/lib/temporal-server.ts) at every start: edits are lost.',
    'log:',
    '  stdout: true',
    `  level: ${o.logLevel}`,
    'persistence:',
    '  defaultStore: default',
    '  visibilityStore: visibility',
    `  numHistoryShards: ${o.historyShards}`,
    '  datastores:',
    '    default:',
    ...store(o.databases.temporal, 20),
    '    visibility:',
    ...store(o.databases.visibility, 10),
    'global:',
    '  membership:',
    '    maxJoinDuration: 30s',
    `    broadcastAddress: ${JSON.stringify(ip)}`,
    ...(p.metrics ? ['  metrics:', '    prometheus:', '      framework: "tally"', '      timerType: "histogram"', `      listenAddress: ${JSON.stringify(`${ip}:${p.metrics}`)}`] : []),
    'services:',
    ...service('frontend', p.frontend, p.frontendMembership, p.frontendHttp),
    ...service('history', p.history, p.historyMembership),
    ...service('matching', p.matching, p.matchingMembership),
    ...service('worker', p.worker, p.workerMembership),
    'clusterMetadata:',
    '  enableGlobalNamespace: false',
    '  failoverVersionIncrement: 10',
    '  masterClusterName: "active"',
    '  currentClusterName: "active"',
    '  clusterInformation:',
    '    active:',
    '      enabled: true',
    '      initialFailoverVersion: 1',
    '      rpcName: "frontend"',
    `      rpcAddress: ${JSON.stringify(`${ip}:${p.frontend}`)}`,
    'dcRedirectionPolicy:',
    '  policy: "noop"',
    'archival:',
    '  history:',
    '    state: "disabled"',
    '  visibility:',
    '    state: "disabled"',
    'namespaceDefaults:',
    '  archival:',
    '    history:',
    '      state: "disabled"',
    '    visibility:',
    '      state: "disabled"',
    'dynamicConfigClient:',
    `  filepath: ${JSON.stringify(o.dynamicConfigPath)}`,
    '  pollInterval: "10s"',
    '',
  ].join('\n');
}

/** The dev server's dynamic config (dev-server.ts), so both modes behave alike. */
function renderDynamicConfig(): string {
  return Object.entries(DEV_SERVER_DYNAMIC_CONFIG).map(([k, v]) => `${k}:\n  - value: ${JSON.stringify(v)}\n`).join('');
}

// ---------------------------------------------------------------------------------------------
// Process

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
    await fs.writeFile(path.join(o.rootDir, 'config', `${envName}.yaml`), renderServerConfig({
      target, databases, ip, ports, historyShards: o.historyShards ?? 4, logLevel: o.logLevel ?? 'warn', dynamicConfigPath,
    }), { mode: 0o600 });
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
    const c = spawn(cmd, cmdArgs, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, [PASSWORD_ENV]: target.password } });
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
    c.on('error', (err) => { exitInfo = `could not be spawned: ${err.message}`; });
    try {
      await waitServing(address(), o.readyTimeoutMs ?? 90_000, () => exitInfo);
    } catch (err) {
      await stopChild();
      throw new Error(`temporal-server (${address()}) failed to start: ${(err as Error).message}\n${tail.slice(-20).join('\n')}\n(full log: ${logFile})`);
    }
    await ensureNamespaceReady(address(), namespace, o.retentionHours ?? 72, log);
    ready = true;
    log(`temporal-server ${TEMPORAL_SERVER_VERSION} ready on ${address()} (namespace ${namespace}, Postgres ${target.host}:${target.port} databases ${databases.temporal} + ${databases.visibility}; ${((Date.now() - started) / 1000).toFixed(1)}s; log ${logFile})`);
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
    get address() { return address(); },
    namespace,
    get ports() { return ports; },
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
export async function ensureNamespaceReady(address: string, namespace: string, retentionHours: number, log: (m: string) => void, timeoutMs = 60_000): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: '5s' });
  try {
    const exists = await connection.workflowService.describeNamespace({ namespace }).then(() => true, (err: { code?: number }) => {
      if (err.code === 5) return false; // NOT_FOUND
      throw err;
    });
    if (!exists) {
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(retentionHours * 3_600_000) });
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
          taskQueue: 'durable-jobs-readiness-probe', workflowId, workflowRunTimeout: '1 minute',
          typedSearchAttributes: [{ key: TenantIdKey, value: 'probe' }, { key: JobTypeKey, value: 'probe' }, { key: JobStateKey, value: 'probe' }],
        });
        await h.terminate('readiness probe').catch(() => undefined);
        if (Date.now() - started > 1_000) log(`search attributes usable after ${((Date.now() - started) / 1000).toFixed(1)}s`);
        return;
      } catch (err) {
        lastErr = err;
        if (Date.now() > deadline) throw new Error(`a workflow start with the search attributes still fails after ${timeoutMs / 1000}s: ${(lastErr as Error).message}`);
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
