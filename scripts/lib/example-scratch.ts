/**
 * A scratch copy of `examples/acme-service/` with this package installed from its packed
 * tarball (never a path into this repository): what `npm run test:example` tests and what the
 * bench's `example` section runs a team's job type from.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** npm's own variables (inherited from `npm run`) would point a nested npm at this repository. */
export const cleanNpmEnv = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

export interface ExampleScratch {
  /** The service's folder, with `node_modules/durable-jobs` installed from the tarball. */
  app: string;
  /** Runs a command in the service's folder; exits the process when it fails. */
  run(cmd: string, args: string[]): void;
  /** Removes the scratch folder (kept when `KEEP_EXAMPLE` is set). */
  remove(): void;
}

export function prepareExampleScratch(say: (m: string) => void, stdio: 'inherit' | 'ignore' = 'inherit'): ExampleScratch {
  const env = cleanNpmEnv();
  const run = (cmd: string, args: string[], cwd: string): void => {
    const t0 = Date.now();
    say(`${cmd} ${args.join(' ')}  (in ${cwd})`);
    const r = spawnSync(cmd, args, { cwd, env, stdio });
    if (r.status !== 0) throw new Error(`${cmd} ${args[0] ?? ''} in ${cwd} failed (${r.status ?? r.signal})`);
    say(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  };
  const work = mkdtempSync(path.join(os.tmpdir(), 'durable-jobs-example-'));
  // As root, embedded Postgres runs its binaries (under the example's node_modules) as the
  // postgres user, which must be able to traverse to them: mkdtemp makes the folder 0700.
  chmodSync(work, 0o755);
  const remove = () => {
    if (!process.env.KEEP_EXAMPLE) rmSync(work, { recursive: true, force: true });
    else say(`kept ${work}`);
  };
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
    return { app, run: (cmd, args) => run(cmd, args, app), remove };
  } catch (err) {
    remove();
    throw err;
  }
}
