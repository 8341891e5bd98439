// The all-in-one server's ports and its config files (rendered by scripts/lib/temporal-server.ts
// at every start).
import net from 'node:net';
import { DEV_SERVER_DYNAMIC_CONFIG } from './dev-server.js';
import type { SqlTarget, TemporalDatabases } from './temporal-server-schema.js';

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

export const PORT_NAMES = [
  'frontend',
  'frontend-http',
  'frontend-membership',
  'history',
  'history-membership',
  'matching',
  'matching-membership',
  'worker',
  'worker-membership',
  'metrics',
] as const;
const camel = (k: string) => k.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as keyof TemporalServerPorts;

/** The layout of the server's sample config, shifted with the frontend port (7233 → 7234, 7235, 7239, 6933...). */
export function defaultPorts(frontend = 7233): TemporalServerPorts {
  if (frontend === 0)
    return {
      frontend: 0,
      frontendHttp: 0,
      frontendMembership: 0,
      history: 0,
      historyMembership: 0,
      matching: 0,
      matchingMembership: 0,
      worker: 0,
      workerMembership: 0,
    };
  const d = frontend - 7233;
  return {
    frontend,
    frontendHttp: 7243 + d,
    frontendMembership: 6933 + d,
    history: 7234 + d,
    historyMembership: 6934 + d,
    matching: 7235 + d,
    matchingMembership: 6935 + d,
    worker: 7239 + d,
    workerMembership: 6939 + d,
  };
}

/**
 * `TEMPORAL_SERVER_PORT` (frontend gRPC, default 7233) shifts the whole layout;
 * `TEMPORAL_SERVER_PORTS="history=7300,metrics=9090,..."` overrides single ports.
 */
export function portsFromEnv(env: NodeJS.ProcessEnv): TemporalServerPorts {
  const frontend = env.TEMPORAL_SERVER_PORT ? parsePort('TEMPORAL_SERVER_PORT', env.TEMPORAL_SERVER_PORT) : 7233;
  const ports = defaultPorts(frontend);
  for (const entry of (env.TEMPORAL_SERVER_PORTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
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

export async function fillPorts(p: TemporalServerPorts, ip: string): Promise<TemporalServerPorts> {
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
// Config

export const PASSWORD_ENV = 'DURABLE_JOBS_TEMPORAL_SQL_PASSWORD';

/**
 * The config is a template (`# enable-template`, rendered by the server with sprig): the
 * database password is read from the environment, so it is never written to disk.
 */
export function renderServerConfig(o: {
  target: SqlTarget;
  databases: TemporalDatabases;
  ip: string;
  ports: TemporalServerPorts;
  historyShards: number;
  logLevel: string;
  dynamicConfigPath: string;
}): string {
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
    ...(p.metrics
      ? [
          '  metrics:',
          '    prometheus:',
          '      framework: "tally"',
          '      timerType: "histogram"',
          `      listenAddress: ${JSON.stringify(`${ip}:${p.metrics}`)}`,
        ]
      : []),
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
export function renderDynamicConfig(): string {
  return Object.entries(DEV_SERVER_DYNAMIC_CONFIG)
    .map(([k, v]) => `${k}:\n  - value: ${JSON.stringify(v)}\n`)
    .join('');
}
