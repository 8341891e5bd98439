/**
 * `npm run worker`: one worker process for the configured Temporal, Postgres and upstream,
 * running the job types of `DURABLE_JOBS_JOBS` (a module exporting a registry) or, unset, the
 * shipped ones. Production runs workers this way (or `durable-jobs worker`), as many processes
 * as the load needs.
 */
import { defaultJobRegistry } from '../jobs/index.js';
import { jobRegistryFromEnv } from '../job-api/load.js';
import { exitOnConfigError } from '../lib/config-or-exit.js';
import { runWorker } from './run.js';

const jobs = await exitOnConfigError('worker', () => jobRegistryFromEnv(process.env, () => defaultJobRegistry));
await runWorker({ jobs });
