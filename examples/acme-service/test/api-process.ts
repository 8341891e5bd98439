// The service's API as it is deployed: `durable-jobs api --jobs src/jobs.ts`, a process of its
// own on the test stack's database and Temporal. At start it creates the Schedules the job types
// declare (`defineJob({ schedule })`) and serves the webhook sources in WEBHOOK_SECRETS.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestStack } from 'durable-jobs/testing';
import { freePort } from './third-party.js';
import { waitFor } from './wait.js';

export interface ApiProcess {
  readonly url: string;
  close(): Promise<void>;
}

export async function startApiProcess(stack: TestStack, env: Record<string, string>): Promise<ApiProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const bin = path.resolve('node_modules', '.bin', 'durable-jobs');
  const child: ChildProcess = spawn(bin, ['api', '--jobs', 'src/jobs.ts'], {
    env: { ...process.env, ...stack.env, HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port), ADMIN_LISTEN_PORT: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    // It listens only after the migrations and the Schedules.
    await waitFor(`durable-jobs api on ${url}`, async () => {
      if (child.exitCode !== null) throw new Error(`durable-jobs api exited (${child.exitCode}):\n${out}`);
      return (await fetch(`${url}/healthz`)
        .then((r) => r.ok)
        .catch(() => false))
        ? true
        : undefined;
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { url, close };
}
