import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in `lib/`). */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Not code that runs in a worker or the API: tests, benchmarks, dependencies, build output. */
const SKIP = new Set(['node_modules', '.git', 'test', 'bench', 'dist', 'coverage', '.cache']);

function sourceFiles(root: string, dir = root, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(root, path, out);
    else if (/\.(ts|sql)$/.test(entry.name) || entry.name === 'package-lock.json') out.push(path);
  }
  return out;
}

/**
 * sha256 over every source file (path and content, in a fixed order): it changes with any
 * edit of the code that runs (workflows, activities, schema, dependencies), committed or not.
 */
export function sourceHash(root: string): string {
  const h = createHash('sha256');
  for (const path of sourceFiles(root).sort()) {
    h.update(relative(root, path).split(sep).join('/')).update('\0').update(readFileSync(path)).update('\0');
  }
  return h.digest('hex');
}

function gitCommit(root: string): string | undefined {
  try {
    const out = execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    });
    return /^[0-9a-f]{40}$/.test(out.trim()) ? out.trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Which code ran an attempt, for dead letters and the replay dry run's "changed since
 * failure": `<package version>+g<commit>.src<content hash>`, or without the commit where
 * there is no git. The package version alone never changes between builds; the content hash
 * also tells apart two builds of one commit with local edits. `CODE_VERSION` overrides it.
 */
export function detectCodeVersion(packageVersion: string, root = REPO_ROOT): string {
  const commit = gitCommit(root);
  return `${packageVersion}+${commit ? `g${commit.slice(0, 12)}.` : ''}src${sourceHash(root).slice(0, 12)}`;
}

/** The package's version: `lib/` sits one folder below package.json here, two in the built package (`dist/lib/`). */
export function packageVersion(): string {
  const require = createRequire(import.meta.url);
  for (const p of ['../package.json', '../../package.json']) {
    try {
      const pkg = require(p) as { name?: string; version: string };
      if (pkg.name === 'durable-jobs') return pkg.version;
    } catch {
      // not at this level
    }
  }
  return '0.0.0';
}
