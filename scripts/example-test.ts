/**
 * `npm run test:example`: the proof that a team can use durable-jobs from its own repository.
 * Packs this package, copies `examples/acme-service/` to a scratch folder outside the
 * repository, installs the tarball there (never a path into this repository) and runs the
 * example's own tests (`durable-jobs/testing`: its own Temporal dev server and Postgres).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const say = (m: string) => console.log(`[example] ${m}`);
// npm's own variables (inherited from `npm run`) would point the nested npm at this repository.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

function run(cmd: string, args: string[], cwd: string): void {
  const t0 = Date.now();
  say(`${cmd} ${args.join(' ')}  (in ${cwd})`);
  const r = spawnSync(cmd, args, { cwd, env, stdio: 'inherit' });
  if (r.status !== 0) {
    say(`${cmd} ${args[0] ?? ''} failed (${r.status ?? r.signal})`);
    process.exit(1);
  }
  say(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

const work = mkdtempSync(path.join(os.tmpdir(), 'durable-jobs-example-'));
// As root, embedded Postgres runs its binaries (under the example's node_modules) as the
// postgres user, which must be able to traverse to them: mkdtemp makes the folder 0700.
chmodSync(work, 0o755);
try {
  run('npm', ['pack', '--pack-destination', work, '--silent'], ROOT);
  const tarball = path.join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz'))!,
  );
  const app = path.join(work, 'acme-service');
  cpSync(path.join(ROOT, 'examples', 'acme-service'), app, {
    recursive: true,
    filter: (src) => !src.includes(`${path.sep}node_modules`),
  });
  run('npm', ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], app);
  run('npm', ['test'], app);
} finally {
  if (!process.env.KEEP_EXAMPLE) rmSync(work, { recursive: true, force: true });
  else say(`kept ${work}`);
}
