import { execFileSync, type ChildProcess } from 'node:child_process';
import { isMainThread } from 'node:worker_threads';

/**
 * Server children (the Temporal dev server, embedded Postgres) must not outlive this process:
 * not after stop(), not when the parent exits without calling it, not on Ctrl-C, and not when
 * the parent is SIGKILLed. Each child is tracked with the signal that shuts it down cleanly.
 */
const tracked = new Map<ChildProcess, NodeJS.Signals>();
let hooksInstalled = false;
/** Marks our signal listeners so they can tell whether someone else handles a signal. */
const OURS = Symbol.for('durable-jobs.child-cleanup');

/** Tracks `child` until it exits; `shutdownSignal` is what stops it cleanly (SIGTERM, or SIGINT for Postgres' fast shutdown). */
export function trackChild(child: ChildProcess, shutdownSignal: NodeJS.Signals): void {
  tracked.set(child, shutdownSignal);
  child.once('exit', () => tracked.delete(child));
  installHooks();
}

export function untrackChild(child: ChildProcess): void {
  tracked.delete(child);
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', () => {
    for (const [c, sig] of tracked) signalGroup(c, sig === 'SIGINT' ? 'SIGINT' : 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      // Someone else (the application, vitest) handles this signal: it owns shutdown and calls
      // stop(); the 'exit' hook covers the rest.
      if (process.listeners(sig).some((l) => !(OURS in l))) return;
      for (const [c, childSig] of tracked) signalGroup(c, childSig);
      process.off(sig, handler);
      // The last of our listeners re-raises the signal with its default action (terminate).
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    Object.defineProperty(handler, OURS, { value: true });
    process.on(sig, handler);
  }
}

let setprivPath: string | null | undefined;

/**
 * Linux: wrap the command in `setpriv --pdeathsig <sig>` so the kernel signals the child when we
 * die, even by SIGKILL (no JS hook runs then). Skipped when setpriv lacks the option (util-linux
 * < 2.33) or off the main thread (the signal fires when the spawning *thread* exits).
 */
export function withParentDeathSignal(cmd: string, args: string[], sig: 'TERM' | 'INT'): [string, string[]] {
  if (setprivPath === undefined) {
    setprivPath = null;
    if (process.platform === 'linux' && isMainThread) {
      for (const p of ['/usr/bin/setpriv', '/bin/setpriv']) {
        try {
          if (execFileSync(p, ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes('--pdeathsig')) {
            setprivPath = p;
            break;
          }
        } catch {
          /* not there */
        }
      }
    }
  }
  return setprivPath ? [setprivPath, ['--pdeathsig', sig, '--', cmd, ...args]] : [cmd, args];
}

/** Signals the child's whole process group (it was spawned detached), else the child itself. */
export function signalGroup(c: ChildProcess, sig: NodeJS.Signals): void {
  if (c.pid === undefined) return;
  try {
    process.kill(-c.pid, sig);
  } catch {
    try {
      c.kill(sig);
    } catch {
      /* already gone */
    }
  }
}

/** Whether a process exists (EPERM: it does, but belongs to another user, e.g. `postgres`). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
