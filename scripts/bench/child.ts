// Workers in processes of their own (scripts/bench/worker-child.ts), so that their RSS and CPU
// seconds can be read from /proc and their Postgres round trips counted apart from the bench's.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PgCounters } from './pg-probe.js';
import { waitUntil } from './stats.js';
import { workerProcessEnv } from '../../lib/worker-allocator.js';
import type { ChildSettings } from './worker-child.js';

const CHILD = fileURLToPath(new URL('./worker-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ChildCounter extends Partial<PgCounters> {
  inFlight: number;
  peak: number;
  completed: number;
  /** The last `commits2` probe: two one-row commits timed inside the child (ms). */
  commits2Ms?: number;
}

export interface Child {
  proc: ChildProcess;
  /** The child's latest report (every 250 ms). */
  counter: ChildCounter;
  /** Asks for a fresh report and waits for it. */
  fresh(): Promise<ChildCounter>;
  /** Starts recording the child's Postgres statements; `dump` writes them to a file. */
  command(line: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startChild(_ctx: { log: (msg: string) => void }, settings: ChildSettings): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(settings)], {
    cwd: ROOT,
    // Every worker child, product and baselines alike, as `npm run worker` starts a worker.
    env: workerProcessEnv(process.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const counter: ChildCounter = { inFlight: 0, peak: 0, completed: 0 };
  const errTail: string[] = [];
  let ready = false;
  let exited: string | null = null;
  let seq = 0;
  let seen = 0;
  const killOnExit = () => proc.kill('SIGKILL');
  process.once('exit', killOnExit);
  proc.stderr!.on('data', (b: Buffer) => {
    errTail.push(b.toString());
    if (errTail.length > 20) errTail.shift();
  });
  let buf = '';
  proc.stdout!.on('data', (b: Buffer) => {
    buf += b.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === 'READY') ready = true;
      else if (line.startsWith('{')) {
        const m = JSON.parse(line) as ChildCounter & { seq?: number };
        if (typeof m.seq === 'number') seen = Math.max(seen, m.seq);
        Object.assign(counter, m);
      }
    }
  });
  const gone = new Promise<void>((resolve) =>
    proc.on('exit', (code, sig) => {
      exited = `exited (code ${code}, signal ${sig})`;
      resolve();
    }),
  );
  await waitUntil(
    `the ${settings.kind} worker child to start`,
    async () => {
      if (exited) throw new Error(`${settings.kind} worker child ${exited}: ${errTail.join('').slice(-1500)}`);
      return ready;
    },
    90_000,
    100,
  ).catch((e: Error) => {
    proc.kill('SIGKILL');
    throw e;
  });
  const child: Child = {
    proc,
    counter,
    async command(line) {
      proc.stdin!.write(`${line}\n`);
      await child.fresh();
    },
    async fresh() {
      const want = ++seq;
      proc.stdin!.write(`${want}\n`);
      await waitUntil(
        'a report from the worker child',
        async () => {
          if (exited) throw new Error(`worker child ${exited}: ${errTail.join('').slice(-1500)}`);
          return seen >= want;
        },
        30_000,
        20,
      );
      return { ...counter };
    },
    async stop() {
      process.off('exit', killOnExit);
      if (exited) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await gone;
      clearTimeout(t);
    },
  };
  return child;
}
