/**
 * Loads a team's registry from the module `--jobs` (or `DURABLE_JOBS_JOBS`) names: the one way
 * every entry point (`durable-jobs dev|worker|api|...`, `npm start` here) learns the job types,
 * so the API, the workers and the CLIs of one deployment cannot disagree about them.
 *
 * The module exports a registry (`createJobRegistry([...])`) or an array of job types
 * (`jobType(...)`), as its default export or as `jobs` or `registry`. TypeScript modules are
 * loaded through tsx when the process does not already understand them.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../lib/errors.js';
import { createJobRegistry, type JobRegistry, type JobTypeModule } from './registry.js';

/** The environment variable that names the jobs module when no `--jobs` is given. */
export const JOBS_MODULE_ENV = 'DURABLE_JOBS_JOBS';

const EXPORT_NAMES = ['default', 'jobs', 'registry'] as const;

const isRegistry = (v: unknown): v is JobRegistry =>
  typeof v === 'object' && v !== null && Array.isArray((v as JobRegistry).modules) && typeof (v as JobRegistry).get === 'function';

const isJobTypeModule = (v: unknown): v is JobTypeModule =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as JobTypeModule).workflowsPath === 'string' &&
  typeof (v as JobTypeModule).activities === 'function' &&
  typeof (v as JobTypeModule).definition?.name === 'string';

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (Array.isArray(v))
    return `an array of ${v.length} (${[...new Set(v.map((x) => (isJobTypeModule(x) ? 'job type' : typeof x)))].join(', ') || 'empty'})`;
  if (typeof v === 'object') return `an object with keys ${Object.keys(v).slice(0, 8).join(', ') || '(none)'}`;
  return `a ${typeof v}`;
}

/**
 * The registry a module exports, or a `ConfigError` naming the module and what it found: no
 * registry, an array with something that is not a job type, or a type registered twice.
 */
export function registryFromExports(exports: Record<string, unknown>, where: string): JobRegistry {
  const found: string[] = [];
  for (const name of EXPORT_NAMES) {
    const v = exports[name];
    if (v === undefined) continue;
    if (isRegistry(v)) return v;
    if (Array.isArray(v) && v.length > 0 && v.every(isJobTypeModule)) {
      try {
        return createJobRegistry(v);
      } catch (err) {
        throw new ConfigError(`jobs module ${where}: export "${name}": ${(err as Error).message}`);
      }
    }
    found.push(`"${name}" is ${describe(v)}`);
  }
  const others = Object.keys(exports).filter((k) => !(EXPORT_NAMES as readonly string[]).includes(k));
  throw new ConfigError(
    `jobs module ${where} exports no job registry: export createJobRegistry([...]) or an array of jobType(...) ` +
      `as "default", "jobs" or "registry"; found ${found.length > 0 ? found.join('; ') : 'none of them'}` +
      (others.length > 0 ? ` (other exports: ${others.slice(0, 8).join(', ')})` : ''),
  );
}

const TS = /\.[cm]?tsx?$/;

/** Imports `file`; a TypeScript file the process cannot load by itself goes through tsx. */
async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if (!TS.test(file) || (err as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  }
  let tsx: { register: () => unknown };
  try {
    tsx = (await import('tsx/esm/api')) as typeof tsx;
  } catch {
    throw new ConfigError(`jobs module ${file} is TypeScript: install tsx (npm install --save-dev tsx) or point at its compiled .js`);
  }
  tsx.register();
  // A new URL: the loader keeps the failed first load of `url` and would answer it again.
  return (await import(`${url}?tsx`)) as Record<string, unknown>;
}

/** Loads the registry of the module `spec` names (a path, relative to `cwd`). */
export async function loadJobRegistry(spec: string, cwd: string = process.cwd()): Promise<JobRegistry> {
  const file = path.resolve(cwd, spec);
  if (!existsSync(file)) throw new ConfigError(`jobs module ${spec} not found (looked for ${file})`);
  let exports: Record<string, unknown>;
  try {
    exports = await importModule(file);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`jobs module ${spec} failed to load: ${(err as Error).message}`);
  }
  return registryFromExports(exports, spec);
}

/**
 * The registry of `--jobs`/`DURABLE_JOBS_JOBS` when one is named, else `fallback()` (this
 * repository's entry points fall back to the shipped types; the package's command refuses).
 */
export async function jobRegistryFromEnv(env: NodeJS.ProcessEnv, fallback: () => JobRegistry | Promise<JobRegistry>): Promise<JobRegistry> {
  const spec = env[JOBS_MODULE_ENV];
  return spec ? loadJobRegistry(spec) : fallback();
}
