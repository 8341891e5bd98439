/**
 * The HTTP API process (`npm run api`). `npm start` runs it with the local stack's addresses;
 * production runs it with DATABASE_URL and TEMPORAL_ADDRESS (or `durable-jobs api`). The job
 * types are those of `DURABLE_JOBS_JOBS` (a module exporting a registry) or, unset, the shipped ones.
 */
import { defaultJobRegistry } from '../jobs/index.js';
import { jobRegistryFromEnv } from '../job-api/load.js';
import { exitOnConfigError } from '../lib/config-or-exit.js';
import { runServer } from './run.js';

const jobs = await exitOnConfigError('api', () => jobRegistryFromEnv(process.env, () => defaultJobRegistry));
await runServer({ jobs });
