import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { Harness } from './harness.js';
import { workerProcessEnv } from '../../lib/worker-allocator.js';

const ENTRY = fileURLToPath(new URL('../../workers/main.ts', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves when the process has exited, by itself or by a signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL: no shutdown hook runs, the lease just stops being renewed. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A real worker process (`npm run worker`'s entry) on the harness's task queue, Postgres and
 * simulator: what production runs, and what a test can SIGKILL.
 */
export async function spawnWorker(h: Harness, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    // As `npm run worker` starts it (lib/worker-allocator.ts).
    env: workerProcessEnv({
      ...process.env,
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      PROVIDER_URL: h.sim.url,
      TASK_QUEUE: h.taskQueue,
      LOG_LEVEL: 'info',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + 90_000;
  while (!out.includes('worker polling')) {
    if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${out.slice(-2000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`worker did not start:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output: () => out,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
