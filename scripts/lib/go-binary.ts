// Locates (or builds) a Go binary pinned to a module version: the Temporal CLI (temporal-cli.ts),
// `temporal-server` and `temporal-sql-tool` (temporal-server.ts). The order:
//   1. an explicit path (an environment variable): it must exist and run, else we throw;
//   2. the binary's name on PATH;
//   3. the cached binary: `${XDG_CACHE_HOME || ~/.cache}/durable-jobs/<cacheDir>/<version>/<name>`;
//   4. if `go` is on PATH: `go install <package>@<version>` (a module with `replace` directives:
//      `go get -tool` + `go build` in a small module, `toolModule`) into a temporary folder next
//      to the cache, printing progress, then an atomic rename(2) into the cache path;
//   5. otherwise an error that says what to install or set (there is no SDK download of these).
// Concurrent resolvers share one build through a lock directory (mkdir is atomic) holding the
// owner's pid; a lock whose owner died is taken over.

import { execFile, spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAlive } from './child-cleanup.js';

export interface GoBinarySpec {
  /** File name on PATH and in the cache, e.g. `temporal-server`. */
  name: string;
  /** How messages name it (default `name`), e.g. `Temporal CLI`. */
  label?: string;
  /** Go package to install, e.g. `go.temporal.io/server/cmd/server`. */
  goPackage: string;
  /** Module version, e.g. `v1.29.1`. */
  version: string;
  /** Folder under `~/.cache/durable-jobs/`. */
  cacheDir: string;
  /** The environment variable that names an explicit binary (for messages). */
  envVar: string;
  /** What a first build costs, printed before it starts. */
  buildHint: string;
  /** Extra `go install` flags (e.g. -ldflags). */
  goFlags?: string[];
  /** The arguments that make it print its version and exit 0 (default `--version`). */
  versionArgs?: string[];
  /**
   * Build it as a tool of a small module instead of `go install pkg@version` (which refuses a
   * module whose go.mod has `replace` directives, e.g. Jaeger's): a temporary module that
   * `go get -tool`s the package and repeats the `replace` lines given here, then `go build`.
   */
  toolModule?: { replaces: string[] };
}

export interface ResolveGoBinaryOptions {
  explicitPath?: string;
  log: (msg: string) => void;
  /** Build with `go install` when nothing else is found. Default true. */
  allowGoInstall?: boolean;
}

const PROGRESS_EVERY_MS = 30_000;
/** A build on a slow 2-core machine takes ~10-20 minutes; give waiters a generous bound. */
const LOCK_WAIT_MAX_MS = 60 * 60_000;

/** Nothing found, and nothing built: `go` is missing, or building was not allowed. */
export class GoBinaryNotFoundError extends Error {
  constructor(
    message: string,
    readonly goMissing: boolean,
  ) {
    super(message);
    this.name = 'GoBinaryNotFoundError';
  }
}

const labelOf = (spec: GoBinarySpec): string => spec.label ?? spec.name;

export function goBinaryCachePath(spec: GoBinarySpec): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
  return path.join(base, 'durable-jobs', spec.cacheDir, spec.version, spec.name);
}

export async function resolveGoBinary(spec: GoBinarySpec, opts: ResolveGoBinaryOptions): Promise<string> {
  const { log } = opts;
  const label = labelOf(spec);
  if (opts.explicitPath !== undefined && opts.explicitPath !== '') {
    const p = path.resolve(opts.explicitPath);
    if (!(await isExecutableFile(p))) throw new Error(`${spec.envVar}=${opts.explicitPath}: not an executable file`);
    const version = await binaryVersion(p, spec);
    if (version === null) throw new Error(`${spec.envVar}=${opts.explicitPath}: \`${spec.name} --version\` failed`);
    log(`${label}: ${p} (${version}, from ${spec.envVar})`);
    return p;
  }

  const onPath = await whichExecutable(spec.name);
  if (onPath) {
    const version = await binaryVersion(onPath, spec);
    if (version !== null) {
      log(`${label}: ${onPath} (${version}, from PATH)`);
      return onPath;
    }
    log(`${label} on PATH (${onPath}) does not run; ignoring it`);
  }

  const cached = goBinaryCachePath(spec);
  const fromCache = await usableCached(spec, cached, log);
  if (fromCache) return fromCache;

  const hint =
    `set ${spec.envVar}, put ${spec.name} on PATH, or install Go >= 1.25 so that it can be built ` +
    `(go install ${spec.goPackage}@${spec.version})`;
  if (opts.allowGoInstall === false) throw new GoBinaryNotFoundError(`${label} not found: ${hint}`, false);
  const go = await whichExecutable('go');
  if (!go) throw new GoBinaryNotFoundError(`${label} not found and \`go\` is not on PATH: ${hint}`, true);
  return buildWithGo(spec, go, cached, log);
}

// ---------------------------------------------------------------------------------------------

async function usableCached(spec: GoBinarySpec, cached: string, log: (msg: string) => void): Promise<string | null> {
  if (!(await isExecutableFile(cached))) return null;
  const version = await binaryVersion(cached, spec);
  if (version !== null) {
    log(`${labelOf(spec)}: ${cached} (${version}, cached build)`);
    return cached;
  }
  log(`cached ${labelOf(spec)} at ${cached} does not run; rebuilding it`);
  await fs.rm(cached, { force: true });
  return null;
}

async function buildWithGo(spec: GoBinarySpec, go: string, cached: string, log: (msg: string) => void): Promise<string> {
  const dir = path.dirname(cached);
  await fs.mkdir(dir, { recursive: true });
  const lockDir = `${cached}.lock`;
  const started = Date.now();
  let lastWaitLog = 0;
  for (;;) {
    if (await tryLock(lockDir)) break;
    const owner = await lockOwner(lockDir);
    if (owner !== null && (owner <= 0 || !isAlive(owner))) {
      log(`removing stale ${labelOf(spec)} build lock (pid ${owner} is gone)`);
      await fs.rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() - started > LOCK_WAIT_MAX_MS) throw new Error(`timed out waiting for another ${labelOf(spec)} build (lock ${lockDir})`);
    if (Date.now() - lastWaitLog >= PROGRESS_EVERY_MS) {
      lastWaitLog = Date.now();
      log(`waiting for another process (pid ${owner ?? '?'}) building ${labelOf(spec)}… ${Math.round((Date.now() - started) / 1000)}s`);
    }
    await sleep(2_000);
    const found = await usableCached(spec, cached, log);
    if (found) return found;
  }
  try {
    const found = await usableCached(spec, cached, log);
    if (found) return found;
    const gobin = await fs.mkdtemp(path.join(dir, '.gobin-'));
    try {
      const built = spec.toolModule ? await buildAsTool(spec, go, gobin, log) : await runGoInstall(spec, go, gobin, log);
      const version = await binaryVersion(built, spec);
      if (version === null) throw new Error(`the freshly built ${built} does not run`);
      await fs.rename(built, cached); // atomic publish: a reader never sees a half-written file
      log(`${labelOf(spec)} ${version} built in ${Math.round((Date.now() - started) / 1000)}s: ${cached}`);
      return cached;
    } finally {
      await fs.rm(gobin, { recursive: true, force: true });
    }
  } finally {
    await fs.rm(lockDir, { recursive: true, force: true });
  }
}

async function runGoInstall(spec: GoBinarySpec, go: string, gobin: string, log: (msg: string) => void): Promise<string> {
  log(`building ${labelOf(spec)} ${spec.version} with go install (${spec.buildHint})…`);
  await runGo(spec, go, ['install', '-v', ...(spec.goFlags ?? []), `${spec.goPackage}@${spec.version}`], { GOBIN: gobin }, undefined, log);
  return path.join(gobin, path.basename(spec.goPackage));
}

/** `spec.toolModule`: a throwaway module in `gobin` that requires the tool, then `go build -o`. */
async function buildAsTool(spec: GoBinarySpec, go: string, gobin: string, log: (msg: string) => void): Promise<string> {
  log(`building ${labelOf(spec)} ${spec.version} as a tool of a small module (${spec.buildHint})…`);
  const mod = path.join(gobin, 'module');
  await fs.mkdir(mod);
  const replaces = (spec.toolModule?.replaces ?? []).map((r) => `replace ${r}\n`).join('');
  await fs.writeFile(path.join(mod, 'go.mod'), `module durable-jobs/${spec.name}-build\n\ngo 1.24\n\n${replaces}`);
  await runGo(spec, go, ['get', '-tool', `${spec.goPackage}@${spec.version}`], {}, mod, log);
  const out = path.join(gobin, spec.name);
  await runGo(spec, go, ['build', '-v', ...(spec.goFlags ?? []), '-o', out, spec.goPackage], {}, mod, log);
  return out;
}

function runGo(
  spec: GoBinarySpec,
  go: string,
  args: string[],
  env: Record<string, string>,
  cwd: string | undefined,
  log: (msg: string) => void,
): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(go, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
        // `go get -tool` also says `go: added <module>` once per module of the tool's graph (hundreds).
        if (line.startsWith('go: downloading ') || line.startsWith('go: added ')) {
          if (++downloaded === 1) log('  go: downloading modules…');
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
        `still building ${labelOf(spec)}… ${Math.round((Date.now() - started) / 1000)}s (${downloaded} modules downloaded, ${compiled} packages compiled)`,
      );
    }, PROGRESS_EVERY_MS);
    timer.unref();
    const killChild = (): void => {
      child.kill('SIGKILL');
    };
    process.on('exit', killChild);
    const cleanup = (): void => {
      clearInterval(timer);
      process.off('exit', killChild);
    };
    child.on('error', (err) => {
      cleanup();
      reject(err);
    });
    child.on('close', (code, signal) => {
      cleanup();
      if (code === 0) {
        log(`go ${args[0]} ${labelOf(spec)} finished in ${Math.round((Date.now() - started) / 1000)}s (${compiled} packages compiled)`);
        resolve();
      } else {
        reject(new Error(`go ${args.join(' ')} failed (code ${code ?? 'null'}, signal ${signal ?? 'null'}):\n${tail.join('\n')}`));
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
    try {
      const st = await fs.stat(lockDir);
      return Date.now() - st.mtimeMs > 60_000 ? -1 : null; // no pid for a minute: left by a crash
    } catch {
      return null;
    }
  }
}

export async function isExecutableFile(p: string): Promise<boolean> {
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

/** `<binary> --version` (first line), or null if the binary does not run. */
function binaryVersion(p: string, spec: GoBinarySpec): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(p, spec.versionArgs ?? ['--version'], { timeout: 30_000 }, (err, stdout) => {
      if (err) resolve(null);
      else resolve(stdout.trim().split('\n')[0] ?? '');
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
