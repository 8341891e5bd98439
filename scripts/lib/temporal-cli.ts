// Locates (or builds) the Temporal CLI used to run the local dev server.
//
// Order (docs: API.md, "Local stack: obtaining the Temporal CLI"):
//   1. an explicit path (TEMPORAL_CLI_PATH): it must exist and run, else we throw;
//   2. `temporal` on PATH;
//   3. the cached binary: `${XDG_CACHE_HOME || ~/.cache}/durable-jobs/temporal-cli/<version>/temporal`;
//   4. if `go` is on PATH: `go install github.com/temporalio/cli/cmd/temporal@<version>` into a
//      temporary GOBIN next to the cache, then an atomic rename into the cache path;
//   5. otherwise null: the caller falls back to the Temporal SDK's own download.
//
// Concurrent resolvers (two `npm start`s, or CI steps) share one build: a lock directory
// (mkdir is atomic) holds the owner's pid; waiters poll until the binary appears or the
// owner dies (stale lock). The binary is only ever published by rename(2), so a reader never
// sees a half-written file.

import { execFile, spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const GO_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';
/** Package holding the CLI's version string; without it the binary reports 0.0.0-DEV. */
const VERSION_VAR = 'github.com/temporalio/cli/temporalcli.Version';
const PROGRESS_EVERY_MS = 30_000;
/** A build on a slow 2-core machine takes ~10-20 minutes; give waiters a generous bound. */
const LOCK_WAIT_MAX_MS = 60 * 60_000;

export interface ResolveTemporalCliOptions {
  /** Explicit binary (the TEMPORAL_CLI_PATH value). */
  cliPath?: string;
  log: (msg: string) => void;
  /** Build with `go install` when nothing else is found. Default true. */
  allowGoInstall?: boolean;
}

export function temporalCliCachePath(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
  return path.join(base, 'durable-jobs', 'temporal-cli', TEMPORAL_CLI_VERSION, 'temporal');
}

export async function resolveTemporalCli(opts: ResolveTemporalCliOptions): Promise<string | null> {
  const { log } = opts;

  // 1. Explicit path: a wrong value is a configuration error, not a reason to fall back.
  if (opts.cliPath !== undefined && opts.cliPath !== '') {
    const p = path.resolve(opts.cliPath);
    if (!(await isExecutableFile(p))) {
      throw new Error(`TEMPORAL_CLI_PATH=${opts.cliPath}: not an executable file`);
    }
    const version = await cliVersion(p);
    if (version === null) {
      throw new Error(`TEMPORAL_CLI_PATH=${opts.cliPath}: \`temporal --version\` failed`);
    }
    log(`Temporal CLI: ${p} (${version}, from TEMPORAL_CLI_PATH)`);
    return p;
  }

  // 2. On PATH.
  const onPath = await whichExecutable('temporal');
  if (onPath) {
    const version = await cliVersion(onPath);
    if (version !== null) {
      log(`Temporal CLI: ${onPath} (${version}, from PATH)`);
      return onPath;
    }
    log(`Temporal CLI on PATH (${onPath}) does not run; ignoring it`);
  }

  // 3. Cached build.
  const cached = temporalCliCachePath();
  const fromCache = await usableCached(cached, log);
  if (fromCache) return fromCache;

  // 4. Build with go.
  if (opts.allowGoInstall === false) return null;
  const go = await whichExecutable('go');
  if (!go) {
    log('Temporal CLI not found and `go` is not on PATH');
    return null;
  }
  return buildWithGo(go, cached, log);
}

// ---------------------------------------------------------------------------------------------

async function usableCached(cached: string, log: (msg: string) => void): Promise<string | null> {
  if (!(await isExecutableFile(cached))) return null;
  const version = await cliVersion(cached);
  if (version !== null) {
    log(`Temporal CLI: ${cached} (${version}, cached build)`);
    return cached;
  }
  log(`cached Temporal CLI at ${cached} does not run; rebuilding it`);
  await fs.rm(cached, { force: true });
  return null;
}

async function buildWithGo(go: string, cached: string, log: (msg: string) => void): Promise<string | null> {
  const dir = path.dirname(cached);
  await fs.mkdir(dir, { recursive: true });
  const lockDir = `${cached}.lock`;

  const started = Date.now();
  let lastWaitLog = 0;
  for (;;) {
    if (await tryLock(lockDir)) break;
    // Someone else is building. Wait for their result, or take over a stale lock.
    const owner = await lockOwner(lockDir);
    if (owner !== null && !isAlive(owner)) {
      log(`removing stale Temporal CLI build lock (pid ${owner} is gone)`);
      await fs.rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() - started > LOCK_WAIT_MAX_MS) {
      throw new Error(`timed out waiting for another Temporal CLI build (lock ${lockDir}, pid ${owner ?? '?'})`);
    }
    if (Date.now() - lastWaitLog >= PROGRESS_EVERY_MS) {
      lastWaitLog = Date.now();
      log(`waiting for another process (pid ${owner ?? '?'}) building the Temporal CLI… ${Math.round((Date.now() - started) / 1000)}s`);
    }
    await sleep(2_000);
    if (await isExecutableFile(cached)) {
      const found = await usableCached(cached, log);
      if (found) return found;
    }
  }

  try {
    // Another resolver may have published the binary while we acquired the lock.
    const found = await usableCached(cached, log);
    if (found) return found;

    const gobin = await fs.mkdtemp(path.join(dir, '.gobin-'));
    try {
      await runGoInstall(go, gobin, log);
      const built = path.join(gobin, 'temporal');
      const version = await cliVersion(built);
      if (version === null) throw new Error(`the freshly built ${built} does not run`);
      await fs.rename(built, cached); // atomic publish (same directory tree, same filesystem)
      log(`Temporal CLI ${version} built in ${Math.round((Date.now() - started) / 1000)}s: ${cached}`);
      return cached;
    } finally {
      await fs.rm(gobin, { recursive: true, force: true });
    }
  } finally {
    await fs.rm(lockDir, { recursive: true, force: true });
  }
}

function runGoInstall(go: string, gobin: string, log: (msg: string) => void): Promise<void> {
  log(`building the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (takes several minutes the first time)…`);
  const args = [
    'install',
    '-v',
    `-ldflags=-X ${VERSION_VAR}=${TEMPORAL_CLI_VERSION.replace(/^v/, '')}`,
    `${GO_PACKAGE}@${TEMPORAL_CLI_VERSION}`,
  ];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(go, args, {
      env: { ...process.env, GOBIN: gobin },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let compiled = 0;
    let downloaded = 0;
    const tail: string[] = [];
    let partial = '';
    const onData = (chunk: Buffer): void => {
      partial += chunk.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line) continue;
        tail.push(line);
        if (tail.length > 40) tail.shift();
        if (line.startsWith('go: downloading ')) {
          downloaded++;
          if (downloaded === 1) log('  go: downloading modules…');
        } else if (/^[\w.\-~/]+$/.test(line)) {
          compiled++; // `-v` prints one package path per compiled package
        } else {
          log(`  ${line}`);
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setInterval(() => {
      log(
        `still building… ${Math.round((Date.now() - started) / 1000)}s (${downloaded} modules downloaded, ${compiled} packages compiled)`,
      );
    }, PROGRESS_EVERY_MS);
    timer.unref();
    const cleanup = (): void => {
      clearInterval(timer);
      process.off('exit', killChild);
    };
    const killChild = (): void => {
      child.kill('SIGKILL');
    };
    process.on('exit', killChild);
    child.on('error', (err) => {
      cleanup();
      reject(err);
    });
    child.on('close', (code, signal) => {
      cleanup();
      if (code === 0) {
        log(`go install finished in ${Math.round((Date.now() - started) / 1000)}s (${compiled} packages compiled)`);
        resolve();
      } else {
        reject(
          new Error(
            `go install ${GO_PACKAGE}@${TEMPORAL_CLI_VERSION} failed (code ${code ?? 'null'}, signal ${signal ?? 'null'}):\n${tail.join('\n')}`,
          ),
        );
      }
    });
  });
}

async function tryLock(lockDir: string): Promise<boolean> {
  try {
    await fs.mkdir(lockDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  await fs.writeFile(path.join(lockDir, 'pid'), `${process.pid}\n`);
  return true;
}

async function lockOwner(lockDir: string): Promise<number | null> {
  try {
    const pid = Number.parseInt(await fs.readFile(path.join(lockDir, 'pid'), 'utf8'), 10);
    return Number.isFinite(pid) ? pid : null;
  } catch {
    // The owner has created the directory but not yet written its pid, or it just finished.
    try {
      const st = await fs.stat(lockDir);
      // A lock directory without a pid for a minute is left over from a crash.
      return Date.now() - st.mtimeMs > 60_000 ? -1 : null;
    } catch {
      return null;
    }
  }
}

function isAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isExecutableFile(p: string): Promise<boolean> {
  try {
    const st = await fs.stat(p);
    if (!st.isFile()) return false;
    await fs.access(p, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function whichExecutable(name: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    if (await isExecutableFile(p)) return p;
  }
  return null;
}

/** `temporal --version` output (first line), or null if the binary does not run. */
function cliVersion(p: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(p, ['--version'], { timeout: 30_000 }, (err, stdout) => {
      if (err) resolve(null);
      else resolve(stdout.trim().split('\n')[0] ?? '');
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
