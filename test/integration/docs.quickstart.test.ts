// The README's quick start, run as a reader runs it: the stack started the way `npm start`
// starts it (`durable-jobs dev --jobs jobs/index.ts`, here on the suite's Temporal and a
// database of this file's own), then the shell block after `<!-- quickstart -->`, extracted
// from README.md and run with bash, only its ports moved to the ones this stack listens on.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, uid, waitFor } from '../support/harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The shell block right after `<!-- quickstart -->` in the README. */
function quickstartBlock(readme: string): string {
  const m = /<!-- quickstart -->\s*\n```(?:sh|bash|console)\n([\s\S]*?)\n```/.exec(readme);
  if (!m) throw new Error('README.md has no ```sh block after <!-- quickstart -->');
  return m[1]!;
}

/** A port that was free a moment ago. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });

let stack: ChildProcess | undefined;
let output = '';
let dataDir: string;
let ports: { http: number; sim: number };

beforeAll(async () => {
  ports = { http: await freePort(), sim: await freePort() };
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'dj-quickstart-'));
  const databaseUrl = await createTestDatabase('quickstart');
  // As `npm start` runs it; the environment picks this file's database, a task queue of its
  // own (its Schedules are named after it) and free ports. The dev tenant and keys are the
  // README's: nothing here seeds them.
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|SEED_|ADMIN_API_KEY|WEBHOOK_SECRETS|PROVIDER_URL)/.test(k))),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TASK_QUEUE: `quickstart-${uid()}`,
    HTTP_PORT: String(ports.http),
    SIM_PORT: String(ports.sim),
    WORKERS: '1',
    DURABLE_JOBS_DATA_DIR: dataDir,
  };
  stack = spawn(process.execPath, ['--import', 'tsx', 'scripts/durable-jobs.ts', 'dev', '--jobs', 'jobs/index.ts'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stack.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  stack.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // Its own banner says when a pasted curl works: after /readyz and a polling worker.
  const deadline = Date.now() + 240_000;
  while (!output.includes('[start] the stack is up')) {
    if (stack.exitCode !== null) throw new Error(`the stack exited (${stack.exitCode}):\n${output.slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`no "[start] the stack is up" in 240 s:\n${output.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, 300_000);

afterAll(async () => {
  if (stack && stack.exitCode === null) {
    const exited = new Promise((resolve) => stack!.once('exit', resolve));
    stack.kill('SIGINT'); // as Ctrl-C: workers, API, simulator stop in order
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe("the README's quick start", () => {
  it('runs as printed: a 202 with a job ID of the shape the README shows, the job in the list, the simulator counting one effect', async () => {
    const block = quickstartBlock(readFileSync(path.join(ROOT, 'README.md'), 'utf8'))
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.http}`)
      .replaceAll('127.0.0.1:8090', `127.0.0.1:${ports.sim}`);
    // Each command's output on its own line, and its exit status: `set -e` stops at the first failure.
    const script = `set -euo pipefail\n${block
      .split(/\n(?=curl )/)
      .map((cmd) => `${cmd}\necho "<exit $?>"`)
      .join('\n')}\n`;
    const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const results = r.stdout.split('<exit 0>').map((s) => s.trim());
    expect(results).toHaveLength(4); // three commands, then what follows the last marker
    // Keyed with the install's server secret (lib/ids.ts): the README shows the ID's shape, the answer the ID.
    const first = JSON.parse(results[0]!) as { jobId: string; status: string; statusUrl: string };
    const jobId = first.jobId;
    expect(jobId).toMatch(/^job-[0-9a-f]{32}$/);
    expect(first).toMatchObject({ status: 'queued', statusUrl: `/v1/jobs/${jobId}` });
    expect(JSON.parse(results[1]!).jobs[0]).toMatchObject({ jobId, type: 'summarize' });
    await waitFor('the job to succeed', async () => {
      const again = spawnSync('bash', ['-c', block.split(/\n(?=curl )/)[1]!], { encoding: 'utf8' });
      return JSON.parse(again.stdout).jobs[0].status === 'succeeded' || undefined;
    });
    const effects = JSON.parse(spawnSync('bash', ['-c', block.split(/\n(?=curl )/)[2]!], { encoding: 'utf8' }).stdout);
    expect(effects.byKey[`${jobId}:summarize`]).toMatchObject({ applied: 1 });
    expect(effects.totalApplied).toBe(1);
  });
});
