/**
 * `durable-jobs/worker`: run a team's job types. `createWorker({ jobs, connection, pool })`
 * polls the task queue of every type it is given (and, with `system: true`, the default, the
 * system workflows on the shared queue); `runWorker({ jobs })` is the whole process from the
 * environment, with signals and a graceful drain, as `durable-jobs worker` runs it.
 */
export { createWorker, queuesFor, type DurableWorker, type DurableWorkerOptions } from './durable-worker.js';
export { runWorker, type RunWorkerOptions } from './run.js';
export { bundleWorkflows } from './worker.js';
export type { JobRegistry, JobTypeModule } from '../job-api/registry.js';
export { AesGcmPayloadCodec, createPayloadCodec, parsePayloadCodecKeys, type PayloadCodecKey } from '../lib/payload-codec.js';
