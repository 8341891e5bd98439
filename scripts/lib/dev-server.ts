// Local Temporal dev server (`temporal server start-dev`), or, without a CLI binary, the
// Temporal SDK's own downloaded dev server (TestWorkflowEnvironment.createLocal).
//
// The CLI child runs in its own process group so that a terminal Ctrl-C reaches only our
// process, which then shuts things down in order (the caller calls stop()). If the process
// exits without calling stop(), an 'exit' hook SIGKILLs the group; a SIGINT/SIGTERM/SIGHUP
// that nobody else handles SIGTERMs the group and re-raises the signal. On Linux the child also
// gets a parent-death signal (setpriv --pdeathsig TERM), which covers our own SIGKILL.

import { spawn } from 'node:child_process';
import { signalGroup, trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes.js';

export const SEARCH_ATTRIBUTES = { TenantId: 'Keyword', JobType: 'Keyword', JobState: 'Keyword' } as const;

/**
 * Dynamic config for the dev server (values are JSON). See TEMPORAL-NOTES.md §7 and §11.
 * Checked against server v1.29.1 (`common/dynamicconfig/constants.go`):
 *  - matching.useNewMatcher (default false): the matcher that honours task priority. The only
 *    entry that changes behaviour on 1.29.1.
 *  - frontend.enableExecuteMultiOperation / enableUpdateWorkflowExecution(AsyncAccepted):
 *    already true by default on 1.29.1; kept explicit so an older CLI behaves the same.
 *  - frontend.activityAPIsEnabled: not a key in 1.29.1 (pause/unpause of workflow activities is
 *    not gated there); older servers needed it, and unknown keys are ignored.
 *  - system.forceSearchAttributesCacheRefreshOnRead: the CLI defaults it to true, which re-reads
 *    the search-attribute metadata from SQLite (through its one connection) on every lookup:
 *    every start, upsert and visibility record of a job carrying attributes. Servers in
 *    production cache it (refreshed every 60 s; an attribute added at runtime is saved through
 *    the same process and shows within seconds), so false is also closer to production.
 *  - system.enableActivityEagerExecution (default false): a workflow task that schedules an
 *    activity gets it back in its completion's answer when the worker has a free slot, which
 *    saves a matching round trip per activity (the worker reserves up to
 *    maxEagerActivityReservationsPerWorkflowTask = 3). The bench's bare baseline runs on the
 *    same server, so it gets the same gain.
 *  - matching.enableFairness (default false): with the new matcher, dispatches a backlogged queue
 *    round-robin across fairness keys (issue 38 §5: every job's workflow carries its tenant as
 *    its key, services/start-job.ts `taskPriority`), so one tenant's flood does not hold another
 *    tenant's jobs back. Checked on 1.29.1 by test/integration/ops.fairness.test.ts.
 * The production shape (scripts/lib/temporal-server.ts) writes the same map for temporal-server
 * v1.32.1; checked there on 2026-12-07 against its `constants.go`: `matching.enableFairness` is
 * still a key and still off by default (the one entry that changes dispatch there);
 * `matching.useNewMatcher`, `system.enableActivityEagerExecution` and the two update switches
 * are true by default there (explicit entries change nothing); `frontend.activityAPIsEnabled` and
 * `frontend.enableExecuteMultiOperation` are not keys of it (the APIs are not gated), and it
 * starts with them in the file (the suite's server group runs on it).
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'frontend.enableExecuteMultiOperation': true,
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'frontend.activityAPIsEnabled': true,
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
  'system.forceSearchAttributesCacheRefreshOnRead': false,
  'system.enableActivityEagerExecution': true,
};

export interface DevServerOptions {
  /** `temporal` binary; null = the SDK's cached download (needs network). */
  cliPath: string | null;
  /** default 127.0.0.1 */
  ip?: string;
  /** 0 or undefined = a free port */
  port?: number;
  /** Web UI port; default: a free port when `port` is 0, else port + 1000. Ignored if headless. */
  uiPort?: number;
  headless?: boolean;
  /** SQLite file for persistence; undefined = in memory (everything is lost on stop). */
  dbFilename?: string;
  /**
   * `--sqlite-pragma` values for a file-backed server. Default TUNED_SQLITE_PRAGMAS (WAL,
   * synchronous=NORMAL, busy_timeout); `[]` keeps SQLite's defaults (the benchmark's untuned case).
   */
  sqlitePragmas?: readonly string[];
  /** default 'default' (always created); another name is created in addition. */
  namespace?: string;
  /** Extra dynamic config, merged over DEV_SERVER_DYNAMIC_CONFIG. */
  dynamicConfig?: Record<string, unknown>;
  /** Readiness deadline; default 60s (a cold start on a busy 2-core machine takes ~5-15s). */
  readyTimeoutMs?: number;
  log: (msg: string) => void;
}

/** What a file-backed dev server needs to be fast enough: WAL and group-friendly fsync. */
export const TUNED_SQLITE_PRAGMAS: readonly string[] = ['journal_mode=WAL', 'synchronous=NORMAL', 'busy_timeout=5000'];

export interface DevServer {
  /** host:port of the frontend gRPC service */
  address: string;
  namespace: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

export async function freePort(ip = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, ip, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const autoPort = !(opts.port && opts.port > 0);
  const headless = opts.headless ?? false;
  const autoUi = !headless && !(opts.uiPort && opts.uiPort > 0) && autoPort;
  let port = autoPort ? await freePort(ip) : (opts.port as number);
  const pickUi = async (): Promise<number | null> =>
    headless ? null : opts.uiPort && opts.uiPort > 0 ? opts.uiPort : autoPort ? freePort(ip) : port + 1000;
  let uiPort = await pickUi();
  const dynamicConfig = { ...DEV_SERVER_DYNAMIC_CONFIG, ...(opts.dynamicConfig ?? {}) };
  const dcArgs = Object.entries(dynamicConfig).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]);

  if (opts.cliPath === null) {
    const uiUrl = uiPort === null ? null : `http://${hostForUrl(ip)}:${uiPort}`;
    return startWithSdk({ ...opts, ip, namespace, port, ui: uiPort, dcArgs, uiUrl });
  }
  const cliPath = opts.cliPath;

  // A port picked by freePort() can be taken by someone else before the server binds it
  // (parallel test files): pick others and try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startCli(opts, cliPath, ip, port, uiPort, namespace, dcArgs);
    } catch (err) {
      if (!(autoPort || autoUi) || attempt >= 5 || !/address already in use/i.test(String(err))) throw err;
      opts.log(`Temporal dev server: port ${port}${uiPort ? `/${uiPort}` : ''} was taken, retrying on others`);
      if (autoPort) port = await freePort(ip);
      if (autoUi) uiPort = await pickUi();
    }
  }
}

async function startCli(
  opts: DevServerOptions,
  cliPath: string,
  ip: string,
  port: number,
  uiPort: number | null,
  namespace: string,
  dcArgs: string[],
): Promise<DevServer> {
  const address = `${hostForUrl(ip)}:${port}`;
  const uiUrl = uiPort === null ? null : `http://${hostForUrl(ip)}:${uiPort}`;
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port)];
  if (uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (opts.dbFilename) {
    args.push('--db-filename', opts.dbFilename, ...(opts.sqlitePragmas ?? TUNED_SQLITE_PRAGMAS).flatMap((p) => ['--sqlite-pragma', p]));
  }
  if (namespace !== 'default') args.push('--namespace', namespace);
  args.push('--log-level', 'warn', '--color', 'never');
  for (const [k, t] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${k}=${t}`);
  args.push(...dcArgs);

  const started = Date.now();
  const [cmd, cmdArgs] = withParentDeathSignal(cliPath, args, 'TERM');
  const child = spawn(cmd, cmdArgs, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(child, 'SIGTERM');

  const tail: string[] = [];
  let stopping = false;
  let ready = false; // before that, a failure is reported by the thrown error
  let exitInfo: string | null = null;
  // The CLI prints "Server:  localhost:PORT" once its services are up. We wait for that line as
  // well as for a successful RPC: the RPC alone could reach another server already holding the
  // port while ours is failing to bind it.
  let announced = false;
  const onData = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      if (/^Server:\s/.test(line)) announced = true;
      tail.push(line);
      if (tail.length > 60) tail.shift();
      // Warnings are frequent and harmless (start-up, shutdown); surface errors only.
      if (ready && !stopping && /\blevel=(ERROR|DPANIC|PANIC|FATAL)\b|"level":"(error|dpanic|panic|fatal)"/i.test(line))
        opts.log(`[temporal] ${line}`);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      untrackChild(child);
      exitInfo = `exited (code ${code ?? 'null'}, signal ${signal ?? 'null'})`;
      if (ready && !stopping) opts.log(`Temporal dev server on ${address} ${exitInfo} unexpectedly:\n${tail.slice(-15).join('\n')}`);
      resolve();
    });
  });
  child.on('error', (err) => {
    exitInfo = `could not be spawned: ${err.message}`;
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || exitInfo !== null) return;
    stopping = true;
    signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await waitReady(
      address,
      namespace,
      opts.readyTimeoutMs ?? 60_000,
      () => exitInfo,
      () => announced,
    );
  } catch (err) {
    await stop();
    throw new Error(
      `Temporal dev server (${cliPath} ${args.slice(0, 2).join(' ')} on ${address}) failed to start: ${(err as Error).message}\n${tail.slice(-20).join('\n')}`,
    );
  }
  try {
    await ensureSearchAttributes(address, namespace, opts.log);
  } catch (err) {
    await stop();
    throw err;
  }
  ready = true;
  opts.log(
    `Temporal dev server ready on ${address} (namespace ${namespace}, ${opts.dbFilename ? `db ${opts.dbFilename}` : 'in memory'}` +
      `${uiUrl ? `, UI ${uiUrl}` : ''}; ${Math.round((Date.now() - started) / 100) / 10}s)`,
  );
  return {
    address,
    namespace,
    uiUrl,
    stop: async () => {
      stopping = true;
      await stop();
    },
  };
}

// ---------------------------------------------------------------------------------------------

async function startWithSdk(
  o: DevServerOptions & { ip: string; namespace: string; port: number; ui: number | null; dcArgs: string[]; uiUrl: string | null },
): Promise<DevServer> {
  o.log("no Temporal CLI binary: using the Temporal SDK's dev-server download (needs network access)…");
  const started = Date.now();
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  let env: Awaited<ReturnType<typeof TestWorkflowEnvironment.createLocal>>;
  try {
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'cached-download' },
        ip: o.ip,
        port: o.port,
        ui: o.ui !== null,
        ...(o.ui !== null ? { uiPort: o.ui } : {}),
        namespace: o.namespace,
        ...(o.dbFilename ? { dbFilename: o.dbFilename } : {}),
        searchAttributes: Object.keys(SEARCH_ATTRIBUTES).map((k) => defineSearchAttributeKey(k, SearchAttributeType.KEYWORD)),
        extraArgs: [...o.dcArgs, ...(o.dbFilename ? (o.sqlitePragmas ?? TUNED_SQLITE_PRAGMAS).flatMap((p) => ['--sqlite-pragma', p]) : [])],
      },
    });
  } catch (err) {
    throw new Error(
      `could not start the Temporal SDK's dev server (${err instanceof Error ? err.message : String(err)}). ` +
        'Offline, provide a Temporal CLI instead: set TEMPORAL_CLI_PATH, put `temporal` on PATH, or install Go >= 1.25 so it can be built',
    );
  }
  try {
    await ensureSearchAttributes(env.address, o.namespace, o.log);
  } catch (err) {
    await env.teardown();
    throw err;
  }
  o.log(`Temporal dev server (SDK download) ready on ${env.address} (${Math.round((Date.now() - started) / 1000)}s)`);
  let stopped = false;
  return {
    address: env.address,
    namespace: o.namespace,
    uiUrl: o.uiUrl,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await env.teardown();
    },
  };
}

async function waitReady(
  address: string,
  namespace: string,
  timeoutMs: number,
  exitInfo: () => string | null,
  announced: () => boolean,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = 'the CLI has not reported "Server:" yet';
  for (;;) {
    const gone = exitInfo();
    if (gone !== null) throw new Error(`the process ${gone}`);
    if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs / 1000}s: ${String(lastErr)}`);
    if (!announced()) {
      await sleep(100);
      continue;
    }
    let conn: Connection | undefined;
    try {
      conn = await Connection.connect({ address, connectTimeout: '2s' });
      await conn.workflowService.describeNamespace({ namespace });
      return;
    } catch (err) {
      lastErr = err;
      await sleep(250);
    } finally {
      await conn?.close().catch(() => undefined);
    }
  }
}

/**
 * The CLI registers --search-attribute only when it creates the namespace, i.e. not for an
 * existing --db-filename created before an attribute was added. Add whatever is missing.
 */
async function ensureSearchAttributes(address: string, namespace: string, log: (msg: string) => void): Promise<void> {
  const conn = await Connection.connect({ address, connectTimeout: '5s' });
  try {
    const { customAttributes } = await conn.operatorService.listSearchAttributes({ namespace });
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((k) => !customAttributes || !(k in customAttributes));
    if (missing.length === 0) return;
    log(`registering search attributes ${missing.join(', ')} on namespace ${namespace}`);
    const searchAttributes = Object.fromEntries(
      missing.map((k) => [k, encodeSearchAttributeIndexedValueType(SearchAttributeType.KEYWORD)!]),
    );
    await conn.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } finally {
    await conn.close();
  }
}

function hostForUrl(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
