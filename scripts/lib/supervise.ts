import { spawn, type ChildProcess } from 'node:child_process';

export interface Supervised {
  name: string;
  stop(): Promise<void>;
  pid(): number | undefined;
}

/**
 * Runs a TypeScript entry as a child (through tsx) and restarts it with backoff if it dies:
 * a killed worker is replaced, as a process manager would do in production. The IPC
 * channel lets the child notice if this parent dies.
 */
export function superviseChild(o: {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  log: (m: string) => void;
  /** How long `stop()` lets the child drain after SIGTERM before SIGKILL. Default 15 s. */
  killAfterMs?: number;
}): Supervised {
  let child: ChildProcess | undefined;
  let stopped = false;
  let failures = 0;
  const start = () => {
    const startedAt = Date.now();
    // A TypeScript entry (this repository) runs through tsx; a built one (the package's dist/) as it is.
    const loader = o.entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
    child = spawn(process.execPath, [...loader, o.entry], { env: o.env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('exit', (code, signal) => {
      if (stopped) return;
      failures = Date.now() - startedAt > 30_000 ? 1 : failures + 1;
      const delay = Math.min(30_000, 500 * 2 ** failures);
      o.log(`${o.name} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setTimeout(() => {
        if (!stopped) start();
      }, delay).unref();
    });
  };
  start();
  return {
    name: o.name,
    pid: () => child?.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        stopped = true;
        if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child?.kill('SIGKILL'), o.killAfterMs ?? 15_000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
