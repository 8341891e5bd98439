#!/usr/bin/env node
/**
 * `durable-jobs <command>`: the package's one command. Every command that runs job types takes
 * `--jobs <module>` (or `DURABLE_JOBS_JOBS`): a module exporting the team's registry,
 * TypeScript or JavaScript. `npm start` in this repository is `durable-jobs dev` with the
 * shipped types, so the two cannot drift.
 */
import path from 'node:path';
import { JOBS_MODULE_ENV, loadJobRegistry } from '../job-api/load.js';
import { ConfigError } from '../lib/errors.js';

interface Command {
  summary: string;
  /** Whether the command runs job types (`required`: it needs `--jobs` or the variable), may read them (`optional`), or takes none. */
  jobs: 'required' | 'optional' | 'none';
  run: () => Promise<unknown>;
}

const COMMANDS: Record<string, Command> = {
  dev: {
    summary: 'the whole local stack: embedded Postgres, Temporal dev server, API, console, simulator, workers',
    jobs: 'required',
    run: () => import('./start.js'),
  },
  worker: {
    summary: 'one worker process (DATABASE_URL, TEMPORAL_ADDRESS, TASK_QUEUE, PROVIDER_URL; --deployment NAME: versioned)',
    jobs: 'required',
    run: runWorkerCommand,
  },
  api: { summary: 'the HTTP API and the console (DATABASE_URL, TEMPORAL_ADDRESS, HTTP_PORT)', jobs: 'required', run: runApiCommand },
  migrate: { summary: 'apply the schema migrations to DATABASE_URL', jobs: 'none', run: runMigrate },
  tenants: {
    summary: 'create tenants and manage their API keys (through the API, with ADMIN_API_KEY)',
    jobs: 'none',
    run: () => import('./tenants.js'),
  },
  dlq: { summary: 'dead letters: list, show, replay (dry run first), discard', jobs: 'none', run: () => import('./dlq.js') },
  pause: {
    summary: "pause or resume a priority, job type, tenant or a tenant's type (through the API)",
    jobs: 'none',
    run: () => import('./pause.js'),
  },
  job: { summary: 'one job: status and its timeline across Postgres and Temporal', jobs: 'none', run: () => import('./job.js') },
  schedules: {
    summary: 'scheduled job types: their Schedules and windows; pause, unpause, trigger now, backfill (through the API)',
    jobs: 'none',
    run: () => import('./schedules.js'),
  },
  bulk: {
    summary: 'bulk cancel, rerun, discard, retry-now, replay by filter (preview first); reruns; failure clusters',
    jobs: 'none',
    run: () => import('./bulk.js'),
  },
  health: {
    summary: 'queue health: age, rates, recovery time (--direct reads each type of --jobs)',
    jobs: 'optional',
    run: () => import('./health.js'),
  },
  drill: {
    summary: 'the failure drill on a stack of its own (or DATABASE_URL/TEMPORAL_ADDRESS)',
    jobs: 'none',
    run: () => import('./drill.js'),
  },
  deploy: {
    summary: 'Worker Versioning: status, set-current <buildId>, ramp <buildId> <percent>, rollback (TEMPORAL_ADDRESS)',
    jobs: 'none',
    run: () => import('./deploy.js'),
  },
  keygen: {
    summary: 'print a new operator key (dj_op_ + 192 random bits) for ADMIN_API_KEYS',
    jobs: 'none',
    run: runKeygen,
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'usage: durable-jobs <command> [--jobs <module>] [options]',
    '',
    'commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    `--jobs <module>  a module exporting the job registry (createJobRegistry([...]) or an array of jobType(...))`,
    `                 as "default", "jobs" or "registry"; TypeScript needs tsx installed. Also ${JOBS_MODULE_ENV}.`,
    "`durable-jobs <command> --help` shows a command's own options.",
  ].join('\n');
}

/** Takes `--jobs X` / `--jobs=X` out of argv; the rest goes to the command. */
export function takeJobsOption(argv: readonly string[]): { jobs: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let jobs: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--jobs') {
      jobs = argv[i + 1];
      if (jobs === undefined || jobs.startsWith('--')) throw new ConfigError('--jobs needs a module path');
      i++;
    } else if (a.startsWith('--jobs=')) jobs = a.slice('--jobs='.length);
    else rest.push(a);
  }
  return { jobs, rest };
}

/** `--deployment NAME` / `--deployment=NAME` (the Worker Deployment; else DURABLE_JOBS_DEPLOYMENT). */
function takeDeploymentOption(argv: readonly string[]): string | undefined {
  const i = argv.findIndex((a) => a === '--deployment' || a.startsWith('--deployment='));
  if (i < 0) return undefined;
  const value = argv[i] === '--deployment' ? argv[i + 1] : argv[i]!.slice('--deployment='.length);
  if (!value || value.startsWith('--')) throw new ConfigError('--deployment needs a Worker Deployment name');
  return value;
}

async function runWorkerCommand(): Promise<void> {
  const { runWorker } = await import('../workers/run.js');
  const deploymentName = takeDeploymentOption(process.argv.slice(2));
  await runWorker({ jobs: await loadJobRegistry(process.env[JOBS_MODULE_ENV]!), ...(deploymentName ? { deploymentName } : {}) });
}

async function runApiCommand(): Promise<void> {
  const { runServer } = await import('../server/run.js');
  await runServer({ jobs: await loadJobRegistry(process.env[JOBS_MODULE_ENV]!) });
}

async function runMigrate(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new ConfigError('durable-jobs migrate needs DATABASE_URL');
  const [{ default: pg }, { migrate }] = await Promise.all([import('pg'), import('../lib/migrate.js')]);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const applied = await migrate(pool);
    console.log(applied.length > 0 ? `applied ${applied.join(', ')}` : 'the schema is up to date');
  } finally {
    await pool.end();
  }
}

/** The key on stdout (to pipe into a secret store), what to do with it on stderr. */
async function runKeygen(): Promise<void> {
  const { generateOperatorKey } = await import('../lib/ids.js');
  console.log(generateOperatorKey());
  console.error(
    'a new operator key, shown this once: add it to ADMIN_API_KEYS as <operator>=<key> (several keys of one operator: key1|key2, to rotate)',
  );
}

async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return;
  }
  const command = COMMANDS[name];
  if (!command) throw new ConfigError(`unknown command "${name.slice(0, 40)}"; commands: ${Object.keys(COMMANDS).join(', ')}`);
  const { jobs, rest } = takeJobsOption(args);
  if (jobs !== undefined) {
    if (command.jobs === 'none') throw new ConfigError(`durable-jobs ${name} takes no --jobs (it talks to the API or the database)`);
    process.env[JOBS_MODULE_ENV] = path.resolve(jobs);
  } else if (process.env[JOBS_MODULE_ENV]) {
    process.env[JOBS_MODULE_ENV] = path.resolve(process.env[JOBS_MODULE_ENV]);
  }
  if (command.jobs === 'required' && !process.env[JOBS_MODULE_ENV])
    throw new ConfigError(`durable-jobs ${name} needs --jobs <module> (or ${JOBS_MODULE_ENV}): the module that exports your job registry`);
  // Fail before anything starts: a module without a registry is named here, not in a child.
  if (command.jobs !== 'none' && process.env[JOBS_MODULE_ENV]) await loadJobRegistry(process.env[JOBS_MODULE_ENV]);
  // The commands read their own arguments from process.argv, as when run on their own.
  process.argv = [process.argv[0]!, `durable-jobs ${name}`, ...rest];
  await command.run();
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`durable-jobs: ${err.message}\n`);
    process.exit(2);
  }
  throw err;
});
