// The package's command, run as a user runs it: its help, and a --jobs module that exports no
// registry or a type twice, refused before anything starts, naming the module and what it found.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../scripts/durable-jobs.ts', import.meta.url));
const REPO = fileURLToPath(new URL('../../', import.meta.url));

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPO, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dj-cli-'));
  await writeFile(path.join(dir, 'none.ts'), 'export const hello = 1;\n');
  await writeFile(
    path.join(dir, 'twice.ts'),
    `import { builtInJobTypes } from ${JSON.stringify(path.join(REPO, 'jobs/index.ts'))};\nexport default [...builtInJobTypes, builtInJobTypes[0]];\n`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('durable-jobs <command>', () => {
  it('--help lists every command with one line each', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['dev', 'worker', 'api', 'migrate', 'tenants', 'dlq', 'job', 'health', 'drill', 'keygen'])
      expect(r.out).toMatch(new RegExp(`^  ${c} +\\S`, 'm'));
  });

  it('keygen prints a new operator key (dj_op_ + 192 random bits) on stdout alone, and what to do with it on stderr', async () => {
    const [a, b] = await Promise.all([run(['keygen']), run(['keygen'])]);
    expect(a.code).toBe(0);
    expect(a.out).toMatch(/^dj_op_[A-Za-z0-9_-]{32}\n$/);
    expect(b.out).not.toBe(a.out);
    expect(a.err).toContain('ADMIN_API_KEYS');
  });

  it('refuses an unknown command, a worker without --jobs, and --jobs where it means nothing', async () => {
    expect(await run(['wrk'])).toMatchObject({ code: 2, err: expect.stringContaining('unknown command "wrk"; commands: dev, worker') });
    const noJobs = await run(['worker'], { DURABLE_JOBS_JOBS: '' });
    expect(noJobs).toMatchObject({ code: 2, err: expect.stringContaining('durable-jobs worker needs --jobs <module>') });
    expect(await run(['dlq', '--jobs', 'x.ts'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('durable-jobs dlq takes no --jobs'),
    });
  });

  it('names the module and what it found: no registry, a type twice, a missing file', async () => {
    const none = await run(['worker', '--jobs', path.join(dir, 'none.ts')]);
    expect(none.code).toBe(2);
    expect(none.err).toContain('exports no job registry');
    expect(none.err).toContain('other exports: hello');
    const twice = await run(['api', '--jobs', path.join(dir, 'twice.ts')]);
    expect(twice.code).toBe(2);
    expect(twice.err).toContain('job type summarize is registered twice');
    const missing = await run(['worker', '--jobs', 'no/such/jobs.ts']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/jobs module \S*no\/such\/jobs\.ts not found/);
  });
});

describe('durable-jobs worker without an upstream', () => {
  it('refuses to start without PROVIDER_URL, naming it and the opt-out, rather than dead-lettering every effect', async () => {
    const r = await run(['worker', '--jobs', path.join(REPO, 'jobs/index.ts')], {
      DATABASE_URL: 'postgres://127.0.0.1:1/none',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      PROVIDER_URL: '',
      DURABLE_JOBS_NO_PROVIDER: '',
    });
    expect(r.code).toBe(2);
    expect(r.out + r.err).toContain('a standalone worker needs PROVIDER_URL');
    expect(r.out + r.err).toContain('DURABLE_JOBS_NO_PROVIDER=true');
  });
});
