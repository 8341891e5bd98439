import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities/index.js';
import { createProvider, type Provider } from '../activities/provider.js';
import { readCredentials } from '../lib/credentials.js';
import { NonRetryableError } from '../lib/errors.js';
import type { ConcurrencyLimits, JobBudgets, JobType } from '../contract/job-types.js';
import { defaultJobRegistry } from '../jobs/index.js';
import { modulePath, type JobRegistry } from '../job-api/registry.js';
import { DEFAULT_WORKER_SHUTDOWN_GRACE_SECONDS } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import { sharedStateFindings } from './module-state.js';
import type { PayloadCodec } from '@temporalio/common';
import { dataConverterOf } from '../lib/payload-codec.js';
import { adoptServerSecret, type ServerSecretOption } from '../lib/secret.js';
import { tracingBundleOptions, tracingWorkerOptions } from './tracing.js';
import { versioningOptions } from './versioning.js';

/** The product's own workflows (schedule trigger, scan, replay); job types add theirs. */
export const SYSTEM_WORKFLOWS_PATH = modulePath(new URL('../workflows/index.ts', import.meta.url));
/** Modules every workflow shares instead of evaluating its own copy (`workflows/shared-modules.ts`). */
const SHARED_MODULES_PATH = modulePath(new URL('../workflows/shared-modules.ts', import.meta.url));

/**
 * The workflow library, preloaded beside zod: the system workflows and what a job type's
 * workflow imports (`durable-jobs/jobs/workflow`: the lifecycle, the step proxies, the contract).
 * The SDK's reusable V8 context otherwise evaluates every module a workflow imports once for
 * each workflow in the cache: each function a closure of its own, each module's objects and
 * helpers again: about 17 KB of live heap per cached workflow (bench/README.md, "Where a
 * worker's memory goes"). These modules keep no per-workflow state in module scope (the one
 * that did, workflows/admission.ts, keeps it in the workflow's globals, which the SDK swaps per
 * workflow); test/unit/workflow-modules.test.ts holds every preloaded module to that. A job
 * type's workflow module is preloaded only when its type says it keeps no such state
 * (`jobType`'s `sharedWorkflow`, which the shipped types set); otherwise its module scope stays
 * each workflow's own.
 */
export const WORKFLOW_LIBRARY_PATHS = [SYSTEM_WORKFLOWS_PATH, modulePath(new URL('../job-api/workflow.ts', import.meta.url))];

/**
 * The bundle's entry for a registry: the system workflows and each job type's workflow
 * function (and its fast-path one), by name (only functions become workflow types). Written to a file named by its
 * content, so concurrent workers of one registry share it, under the `node_modules` that
 * holds `@temporalio/workflow`: the bundler resolves the SDK from the entry's folder upwards.
 */
export async function writeWorkflowsEntry(jobs: JobRegistry): Promise<string> {
  const lines = [
    `export * from ${JSON.stringify(SYSTEM_WORKFLOWS_PATH)};`,
    ...jobs.modules.map(
      (m) =>
        `export { ${[m.definition.workflowType, m.definition.fastPathWorkflowType].filter(Boolean).join(', ')} } from ${JSON.stringify(m.workflowsPath)};`,
    ),
  ];
  const text = `${lines.join('\n')}\n`;
  const sdk = createRequire(import.meta.url).resolve('@temporalio/workflow/package.json');
  const dir = path.join(path.dirname(path.dirname(path.dirname(sdk))), '.cache', 'durable-jobs-workflows');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `entry-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.ts`);
  // Never rewrite in place: another worker process may be bundling from this very file, and
  // a truncate-then-write lets it read an empty entry (a bundle without job workflows).
  const current = await readFile(file, 'utf8').catch(() => undefined);
  if (current !== text) {
    const staging = `${file}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(staging, text);
    await rename(staging, file);
  }
  return file;
}

/**
 * The bundle's source map: line mappings to the original files, without their text. The SDK's
 * default (`inline-source-map`) inlines every bundled file's source (zod's alone is 0.8 MB) and
 * column mappings; the SDK reads the sources only for `showStackTraceSources`, which no worker
 * here sets, yet each workflow thread holds and parses the whole map. Measured on this machine:
 * the bundle 4.4 -> 1.9 MB and an idle worker 35-40 MB less RSS (bench/README.md, worker
 * memory). Stack traces (the Web UI's, failures') still name the .ts file and line; the column is 0.
 */
export const WORKFLOW_SOURCE_MAP = 'inline-nosources-cheap-module-source-map';

/** The bundler's `webpackConfigHook` that applies `WORKFLOW_SOURCE_MAP` (the bench's baseline bundles use it too). */
export const withWorkflowSourceMap = <C extends object>(config: C): C => ({ ...config, devtool: WORKFLOW_SOURCE_MAP });

/**
 * The job types' workflow modules a bundle preloads (each shared by every workflow of a
 * thread): a type's module when its `sharedWorkflow` says so, and, unless it says `false`, when
 * the module and the local modules it imports keep no state in module scope
 * (workers/module-state.ts). `unshared`: the types left out by that check, with what it found.
 */
export function sharedWorkflowModules(jobs: Pick<JobRegistry, 'modules'>): {
  shared: string[];
  unshared: { jobType: string; findings: string[] }[];
} {
  const shared: string[] = [];
  const unshared: { jobType: string; findings: string[] }[] = [];
  for (const m of jobs.modules) {
    if (m.sharedWorkflow === false) continue;
    const findings = m.sharedWorkflow ? [] : sharedStateFindings(m.workflowsPath);
    if (findings.length === 0) shared.push(m.workflowsPath);
    else unshared.push({ jobType: m.definition.name, findings });
  }
  return { shared, unshared };
}

/**
 * Bundle once and share: bundling takes seconds, and every worker in a process can reuse it.
 * `log`: says which job types' workflow modules keep state and so are evaluated per workflow.
 */
export async function bundleWorkflows(jobs: JobRegistry = defaultJobRegistry, log?: Logger): Promise<WorkflowBundleOption> {
  const { shared, unshared } = sharedWorkflowModules(jobs);
  for (const u of unshared) {
    log?.warn(
      { jobType: u.jobType, findings: u.findings },
      "a job type's workflow module keeps state in module scope, so each workflow evaluates it again (slower): move that state into the workflow function, or set sharedWorkflow: false in jobType() to say so",
    );
  }
  const { code } = await bundleWorkflowCode({
    workflowsPath: await writeWorkflowsEntry(jobs),
    // Evaluated once per workflow thread (shared, frozen), not once per cached workflow: zod, the
    // workflow library, each job type's definition that names its module (its input schema and
    // plain data), and the workflow modules of the types that declare them stateless.
    preloadModules: [
      SHARED_MODULES_PATH,
      ...WORKFLOW_LIBRARY_PATHS,
      ...jobs.modules.flatMap((m) => (m.definitionPath ? [m.definitionPath] : [])),
      ...shared,
    ],
    logger: quietBundlerLogger,
    webpackConfigHook: withWorkflowSourceMap,
    ...tracingBundleOptions(),
  });
  return { code };
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  /** Base URL of the upstream of `ctx.effect` (`PROVIDER_URL`); undefined: an effect fails, not retried, naming the setting. */
  providerUrl: string | undefined;
  /** Fallback upstream (`PROVIDER_FALLBACK_URL`); default none: a job never switches. */
  fallbackProviderUrl?: string | undefined;
  log: Logger;
  codeVersion: string;
  /**
   * The Worker Deployment this worker belongs to (`DURABLE_JOBS_DEPLOYMENT`, `--deployment`): it
   * registers `codeVersion` as a version of it and runs only what Temporal routes there, job
   * workflows pinned to the build that started them (workers/versioning.ts). Default none: unversioned.
   */
  deploymentName?: string | undefined;
  /** The job types this worker runs. Default: the shipped ones (`jobs/index.ts`). */
  jobs?: JobRegistry;
  /** Overrides of each job type's own limits (config `CONCURRENCY_LIMITS`). Default none. */
  concurrencyLimits?: Partial<Record<JobType, Partial<ConcurrencyLimits>>>;
  workflowBundle?: WorkflowBundleOption;
  /** Concurrent activity attempts per worker (`WORKER_ACTIVITY_SLOTS`). Default 50. */
  maxConcurrentActivityTaskExecutions?: number;
  /** Concurrent workflow tasks per worker (`WORKER_WORKFLOW_SLOTS`). Default: the SDK's (40). */
  maxConcurrentWorkflowTaskExecutions?: number | undefined;
  /** Sticky workflow cache size (`WORKER_CACHED_WORKFLOWS`). Default: the SDK's (from the heap size). */
  maxCachedWorkflows?: number | undefined;
  /** Concurrent workflow / activity task polls (`WORKER_WORKFLOW_POLLERS`, `WORKER_ACTIVITY_POLLERS`). Default: the SDK's. */
  maxConcurrentWorkflowTaskPolls?: number | undefined;
  maxConcurrentActivityTaskPolls?: number | undefined;
  /** Cap on upstream calls across every job type and tenant (`CONCURRENCY_TOTAL`). Default: none. */
  concurrencyTotal?: number | undefined;
  identity?: string;
  /** Budget overrides (`JOB_BUDGETS`) for jobs that schedules and the scan start. Default none. */
  jobBudgets?: JobBudgets;
  /** Types whose jobs started by schedules, the scan and replays take the fast path (`FAST_PATH_JOB_TYPES`). Default none. */
  fastPathTypes?: ReadonlySet<string>;
  /**
   * After `shutdown()`, how long in-flight attempts may run before they are cancelled
   * (`WORKER_SHUTDOWN_GRACE_SECONDS`). Default 20 s. A worker whose attempts ignore the
   * cancel gives up 10 s later (`run()` throws GracefulShutdownPeriodExpiredError).
   */
  shutdownGraceMs?: number;
  /**
   * Where the credentials of the types' upstreams are read from, once, before the worker polls
   * (`jobType(..., { upstreams })`, lib/credentials.ts): a missing one is a ConfigError naming
   * its variable. Default `process.env`.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * The server secret (`DURABLE_JOBS_SECRET`; `lib/secret.ts`): the API's, so both derive the
   * same hashes. Default: the one this process installed; none at all is a ConfigError.
   */
  secret?: ServerSecretOption;
  /**
   * Encrypts every payload this worker puts in Temporal (step outputs, results, signals) and
   * decrypts what it reads (`lib/payload-codec.ts`, config `PAYLOAD_CODEC_KEYS`): the API's
   * client must run the same codec. Default none: payloads in plain.
   */
  payloadCodec?: PayloadCodec;
}

/** The upstream of a worker started without `PROVIDER_URL`: an effect is a configuration error, never retried. */
const noProvider: Provider = Object.assign(
  async () => {
    throw new NonRetryableError('this worker has no upstream: set PROVIDER_URL (createWorker({ providerUrl }))', {
      errorClass: 'configuration',
    });
  },
  { upstreamName: 'provider' },
);

/** Room after the grace time for cancelled attempts to record what they know and report. */
const SHUTDOWN_FORCE_AFTER_GRACE_MS = 10_000;

export async function createQueueWorker(o: WorkerOptions): Promise<Worker> {
  const jobs = o.jobs ?? defaultJobRegistry;
  const limits = jobs.concurrencyLimits(o.concurrencyLimits);
  const graceMs = o.shutdownGraceMs ?? DEFAULT_WORKER_SHUTDOWN_GRACE_SECONDS * 1000;
  // Before anything polls: a worker without its upstream's key must not start taking jobs it can only fail.
  readCredentials(jobs.credentials, o.env ?? process.env);
  adoptServerSecret(o.secret, 'createWorker');
  const activities = createActivities({
    jobs,
    pool: o.pool,
    provider: o.providerUrl ? createProvider(o.providerUrl) : noProvider,
    log: o.log,
    codeVersion: o.codeVersion,
    limits,
    fallbackProvider: o.fallbackProviderUrl ? createProvider(o.fallbackProviderUrl, 'provider-fallback') : undefined,
    jobBudgets: o.jobBudgets,
    fastPathTypes: o.fastPathTypes,
    totalConcurrency: o.concurrencyTotal,
  });
  // Only the options that were given: the native bridge refuses explicit undefineds.
  const tuning = Object.fromEntries(
    Object.entries({
      maxConcurrentWorkflowTaskExecutions: o.maxConcurrentWorkflowTaskExecutions,
      maxCachedWorkflows: o.maxCachedWorkflows,
      maxConcurrentWorkflowTaskPolls: o.maxConcurrentWorkflowTaskPolls,
      maxConcurrentActivityTaskPolls: o.maxConcurrentActivityTaskPolls,
    }).filter(([, v]) => v !== undefined),
  );
  return Worker.create({
    connection: o.connection,
    namespace: o.namespace,
    taskQueue: o.taskQueue,
    workflowBundle: o.workflowBundle ?? (await bundleWorkflows(jobs, o.log)),
    activities,
    ...(await tracingWorkerOptions()),
    ...dataConverterOf(o.payloadCodec),
    ...(o.identity ? { identity: o.identity } : {}),
    // The code version as the build ID: Temporal lists it per poller (DescribeTaskQueue), so the
    // replay dry run compares a dead letter with the code of the workers that would run its
    // replay (services/worker-versions.ts); with a deployment name, also the Worker Deployment
    // Version whose pinned workflows only this build runs (workers/versioning.ts).
    ...versioningOptions(o.codeVersion, o.deploymentName),
    maxConcurrentActivityTaskExecutions: o.maxConcurrentActivityTaskExecutions ?? 50,
    ...tuning,
    // A SIGTERM (a deploy) stops polling at once; in-flight attempts finish within the grace
    // time instead of being abandoned to a heartbeat timeout and a second attempt. At the
    // deadline the SDK cancels them (reason WORKER_SHUTDOWN), and they record why they stopped.
    shutdownGraceTime: graceMs,
    shutdownForceTime: graceMs + SHUTDOWN_FORCE_AFTER_GRACE_MS,
  });
}
