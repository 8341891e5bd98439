import { z } from 'zod';
import { detectCodeVersion, packageVersion } from './code-version.js';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { parseTenants, withHighPriority, type TenantSeed } from './seed-tenants.js';
import { adminListenerFrom, httpLimitsFrom, type AdminListenerConfig, type HttpLimits } from './http-limits.js';
import { MIN_CONFIGURED_KEY_LENGTH } from './ids.js';
import { ConfigError } from './errors.js';
import { webhookSecretsFrom } from './webhook-secrets.js';
import { keyDigest, parseAdminKeys, type OperatorKey } from './config-admin-keys.js';
import { httpTlsFrom, type HttpTls } from './config-http-tls.js';
import { serverSecretFrom, type ServerSecret } from './secret.js';
import { payloadCodecKeysFrom, type PayloadCodecKey } from './payload-codec.js';
import type { ConcurrencyLimits, JobBudget, JobType } from '../contract/job-types.js';
import { RETENTION_TABLES, type RetentionTable } from '../contract/retention.js';

/** The shared task queue when `TASK_QUEUE` is unset: the system workflows and every job type without a queue of its own. */
export const DEFAULT_TASK_QUEUE = 'durable-jobs';

/** The package version: part of every dead letter's evidence (which code ran the attempt). */
export const PACKAGE_VERSION: string = packageVersion();

/**
 * The one place that reads `process.env`. Everything else receives a `Config`.
 * `mode: 'dev'` is what `npm start` and tests use (seeded demo tenant, known admin key);
 * `'production'` seeds nothing and requires the admin key to be set explicitly.
 */
export type Mode = 'dev' | 'production';

/** See `Config.workerShutdownGraceSeconds`. */
export const DEFAULT_WORKER_SHUTDOWN_GRACE_SECONDS = 20;

export type { TenantSeed } from './seed-tenants.js';

export { ROLES, type OperatorKey, type Role } from './config-admin-keys.js';

export interface Config {
  mode: Mode;
  /** HTTP API port. Default 8080. */
  httpPort: number;
  /** Bind address of the HTTP API. Default 127.0.0.1 in dev, 0.0.0.0 in production. */
  httpHost: string;
  /** Request, header, idle and keep-alive timeouts and the connection cap (`HTTP_*`, lib/http-limits.ts). */
  httpLimits: HttpLimits;
  /** The listener of `/metrics`, `/openapi.json` and the detailed `/readyz` (`ADMIN_LISTEN_*`, lib/http-limits.ts). */
  adminListener: AdminListenerConfig;
  /** `TLS_CERT_FILE` + `TLS_KEY_FILE` (PEM, read at start): the API serves HTTPS. Default: plain HTTP (TLS at a proxy). */
  httpTls: HttpTls | undefined;
  /**
   * The console's sessions (`POST /v1/admin/session`): `SESSION_IDLE_SECONDS` (default 900) and
   * `SESSION_ABSOLUTE_SECONDS` (default 28800, 8 h); `SESSION_COOKIE_SECURE` (default: true when
   * the API serves TLS; set it behind a TLS-terminating proxy).
   */
  sessions: { idleSeconds: number; absoluteSeconds: number; secureCookie: boolean };
  /** Existing Temporal frontend; undefined means `npm start` runs a local dev server on 127.0.0.1:7233. */
  temporalAddress: string | undefined;
  /** Default `default`. */
  temporalNamespace: string;
  /** Web UI port of the local dev server. Default 8233. */
  temporalUiPort: number;
  temporalCliPath: string | undefined;
  /** Temporal Cloud API key; implies TLS. */
  temporalApiKey: string | undefined;
  temporalTls: boolean;
  temporalTlsCertPath: string | undefined;
  temporalTlsKeyPath: string | undefined;
  /**
   * How to reach Temporal beyond the address (TLS, API key, gRPC metadata), the way the
   * Temporal CLI and SDKs read it (`@temporalio/envconfig`): a profile of TEMPORAL_CONFIG_FILE or
   * ~/.config/temporalio/temporal.toml (TEMPORAL_PROFILE, default `default`) under the standard
   * TEMPORAL_* variables. In dev mode a profile file is read only when TEMPORAL_PROFILE or
   * TEMPORAL_CONFIG_FILE is set, so a Cloud profile on a laptop does not capture `npm start`.
   */
  temporalConnection: Omit<ClientConnectConfig['connectionOptions'], 'address'>;
  /** Task queue the job workflows and activities run on. Default `durable-jobs`. */
  taskQueue: string;
  /** undefined means embedded Postgres with data under `.data/`. */
  databaseUrl: string | undefined;
  /** Upstream base URL; undefined means `npm start` runs the simulator on 127.0.0.1:SIM_PORT. */
  providerUrl: string | undefined;
  /**
   * Fallback upstream base URL (`PROVIDER_FALLBACK_URL`); undefined: none. Workers call it
   * only for job types that declare a fallback and that an operator switched to it.
   */
  providerFallbackUrl: string | undefined;
  /** Default 8090. */
  simPort: number;
  simWebhookUrl: string;
  /** Base URL of the HTTP API, for CLIs such as `npm run dlq` (`DJ_API_URL`). Default http://127.0.0.1:$HTTP_PORT. */
  apiUrl: string;
  /** Worker processes `npm start` runs. Default 1. */
  workers: number;
  seedTenants: TenantSeed[];
  /**
   * The admin key this process *sends* (the CLIs): `ADMIN_API_KEY`, or `admin-key` in dev mode
   * when no `ADMIN_API_KEYS` are configured. The server accepts `adminKeys` only.
   */
  adminApiKey: string | undefined;
  /**
   * The admin keys the API accepts, each naming its operator, hashed (`ADMIN_API_KEYS`:
   * `alice=key1|key2,bob=sha256:<hex>`, several per operator for rotation; `ADMIN_API_KEY`
   * is a key of operator "admin").
   */
  adminKeys: OperatorKey[];
  /** Temporal Web UI base URL for links from the console (`TEMPORAL_UI_URL`, `none`: no links); dev default http://127.0.0.1:$TEMPORAL_UI_PORT. */
  temporalUiUrl: string | undefined;
  /** The trace UI's link for a job's trace (`TRACE_UI_URL`, `{traceId}` replaced, e.g. Jaeger's `http://127.0.0.1:16686/trace/{traceId}`); default none: the timeline shows the ID only. */
  traceUiUrl: string | undefined;
  /**
   * source → secrets (`whsec_...`), several for rotation; the first one signs. `WEBHOOK_SECRETS`,
   * and per source the entries of `WEBHOOK_SECRETS_FILE` over them.
   */
  webhookSecrets: Record<string, string[]>;
  /**
   * Where `webhookSecrets` came from, so the API can read them again on SIGHUP
   * (`webhookSecretsFrom(env, file)`): a rotation without a restart. Default: no file.
   */
  webhookSecretsSource: { env: string; file?: string };
  logLevel: string;
  /**
   * The key of every keyed hash (job IDs, key and input hashes, API key hashes, key IDs):
   * `DURABLE_JOBS_SECRET` or `DURABLE_JOBS_SECRET_FILE`, newest first (`lib/secret.ts`).
   * undefined: not set (the dev stack generates one; production refuses to start).
   */
  serverSecret: ServerSecret | undefined;
  /**
   * AES-256-GCM keys of the payload codec (`PAYLOAD_CODEC_KEYS` or `PAYLOAD_CODEC_KEYS_FILE`,
   * `id=<base64>`, newest first: the first encrypts; `lib/payload-codec.ts`). Default none: payloads in plain.
   */
  payloadCodecKeys: PayloadCodecKey[];
  /** Per job type overrides of the retry budget (`JOB_BUDGETS`, JSON). */
  jobBudgets: Partial<Record<JobType, Partial<JobBudget>>>;
  /**
   * Job types whose new jobs take the fast path (`FAST_PATH_JOB_TYPES`, comma-separated; each
   * must declare `fastPath`). Default none: README "The fast path" says what a type gives up.
   */
  fastPathTypes: ReadonlySet<JobType>;
  /** Overrides of each job type's own caps (`CONCURRENCY_LIMITS`); the registry applies them. */
  concurrencyLimits: Partial<Record<JobType, Partial<ConcurrencyLimits>>>;
  /** Version of the code that ran an attempt (dead-letter evidence). */
  codeVersion: string;
  /**
   * How long a worker that got SIGTERM lets its in-flight attempts finish before it cancels
   * them (`WORKER_SHUTDOWN_GRACE_SECONDS`). Default 20 s: longer than the default upstream
   * timeout (15 s), so a call in flight ends by itself, and inside Kubernetes' default 30 s.
   */
  workerShutdownGraceSeconds: number;
  /** How long each growing table keeps its rows, and the idempotency window (README "Retention"). */
  retention: RetentionConfig;
  /** Worker and connection tuning (README "Tuning"). */
  tuning: TuningConfig;
}

/** Worker and Postgres pool sizing; each default stated (README "Tuning"). */
export interface TuningConfig {
  /** `PG_POOL_SIZE`: Postgres connections per API or worker process. Default 10. */
  pgPoolSize: number;
  /** `DATABASE_MIGRATION_URL`: a direct connection (not through PgBouncer) for migrations. Default: `DATABASE_URL`. */
  migrationUrl: string | undefined;
  /** `CONCURRENCY_TOTAL`: upstream calls in flight across every job type and tenant. Default 128. */
  concurrencyTotal: number;
  /** `WORKER_ACTIVITY_SLOTS`: activity attempts one worker runs at once. Default 50. */
  activitySlots: number;
  /** `WORKER_WORKFLOW_SLOTS`: workflow tasks one worker runs at once. Default: the SDK's (40). */
  workflowSlots: number | undefined;
  /** `WORKER_CACHED_WORKFLOWS`: workflows kept in the worker's sticky cache. Default: the SDK's (from the heap size). */
  cachedWorkflows: number | undefined;
  /** `WORKER_WORKFLOW_POLLERS` / `WORKER_ACTIVITY_POLLERS`: concurrent long polls. Default: the SDK's (min(10, slots)). */
  workflowPollers: number | undefined;
  activityPollers: number | undefined;
  /** `INTAKE_START_MARK_MS`: how long the intake gathers "workflow started" marks into one statement (0: one each, before the answer). Default 100. */
  startMarkWindowMs: number;
}

export interface RetentionConfig {
  /** Days per table (`RETENTION_DAYS`, overridden per table by `RETENTION_DAYS_BY_TABLE`). */
  days: Record<RetentionTable, number>;
  /**
   * `IDEMPOTENCY_WINDOW_DAYS` (default 7): for at least this long after a job finished, its
   * Idempotency-Key answers with the same job. The intent of a finished job is never kept
   * shorter (`job_intents` retention ≥ the window).
   */
  idempotencyWindowDays: number;
  /** Rows per DELETE of the cleanup (`RETENTION_BATCH_SIZE`, default 500). */
  batchSize: number;
}

/**
 * Defaults that differ from `RETENTION_DAYS`: the samples feed only the last day's trend lines,
 * operator audit lives longer, and a concurrency lease expired a day ago belonged to a worker
 * that died without freeing it and whose slot nobody took over (store/concurrency.ts).
 */
const RETENTION_DEFAULTS: Partial<Record<RetentionTable, number>> = { health_samples: 1, degradation_audit: 365, concurrency_leases: 1 };

function retentionConfig(days: number, windowDays: number, batchSize: number, raw: string | undefined): RetentionConfig {
  let overrides: Partial<Record<RetentionTable, number>> = {};
  if (raw !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new ConfigError('RETENTION_DAYS_BY_TABLE must be a JSON object keyed by table');
    }
    const parsed = z.partialRecord(z.enum(RETENTION_TABLES), z.number().positive()).safeParse(json);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw new ConfigError(
        `RETENTION_DAYS_BY_TABLE: ${i.path.join('.') || '(root)'}: ${i.message} (tables: ${RETENTION_TABLES.join(', ')}; days > 0)`,
      );
    }
    overrides = parsed.data;
  }
  if (overrides.job_intents !== undefined && overrides.job_intents < windowDays) {
    throw new ConfigError(
      `RETENTION_DAYS_BY_TABLE: job_intents (${overrides.job_intents} days) must be at least IDEMPOTENCY_WINDOW_DAYS (${windowDays})`,
    );
  }
  const out = Object.fromEntries(RETENTION_TABLES.map((t) => [t, overrides[t] ?? RETENTION_DEFAULTS[t] ?? days])) as Record<
    RetentionTable,
    number
  >;
  out.job_intents = Math.max(out.job_intents, windowDays);
  return { days: out, idempotencyWindowDays: windowDays, batchSize };
}

const port = (name: string, fallback: number) =>
  z.coerce
    .number({ error: `${name} must be a port number (1-65535)` })
    .int(`${name} must be a whole number`)
    .min(1, `${name} must be 1-65535`)
    .max(65535, `${name} must be 1-65535`)
    .default(fallback);

/**
 * The built-in tenant of `npm start` when SEED_TENANTS is unset; its key is public (the README's examples use it),
 * and it may submit priority high, so `npm start` can try load shedding with every priority.
 */
export const DEMO_TENANT: TenantSeed = { tenantId: 'demo', apiKey: 'demo-key', highPriority: true };
/**
 * Dev mode's admin key when none is configured, public like the demo key (API.md names both).
 * The two are the only keys exempt from the 32-character minimum, and only in dev mode: they
 * are published, so length would protect nothing, and `npm start` serves loopback only.
 */
export const DEV_ADMIN_KEY = 'admin-key';

const positiveInt = z.number().int().positive();
const BUDGET_SCHEMA = z
  .object({
    heartbeatTimeoutMs: positiveInt.min(1_000),
    startToCloseTimeoutMs: positiveInt.min(1_000),
    scheduleToCloseTimeoutMs: positiveInt.min(1_000),
    maximumAttempts: positiveInt,
    backoffBaseMs: positiveInt,
    backoffCapMs: positiveInt,
    upstreamTimeoutMs: positiveInt.min(100),
  })
  .partial()
  .strict();
const LIMITS_SCHEMA = z.object({ perTenant: positiveInt, global: positiveInt }).partial().strict();

export type ConfigOptions = { jobTypes: readonly JobType[]; fastPathTypes?: readonly JobType[]; mode?: Mode; codeVersion?: string };

/** `FAST_PATH_JOB_TYPES`: a comma-separated list of registered types that declare a fast path. */
function fastPathTypes(raw: string | undefined, jobTypes: readonly JobType[], eligible: readonly JobType[] | undefined): Set<JobType> {
  const names = (raw ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  for (const n of names) {
    if (!jobTypes.includes(n))
      throw new ConfigError(`FAST_PATH_JOB_TYPES: "${n.slice(0, 64)}" is not a job type (job types: ${jobTypes.join(', ')})`);
    if (eligible && !eligible.includes(n))
      throw new ConfigError(`FAST_PATH_JOB_TYPES: job type ${n} declares no fast path (types with one: ${eligible.join(', ') || 'none'})`);
  }
  return new Set(names);
}

/** Parses a JSON object keyed by job type, e.g. `{"summarize": {"maximumAttempts": 5}}`. */
function perJobType<T extends z.ZodType>(
  name: string,
  raw: string | undefined,
  schema: T,
  jobTypes: readonly JobType[],
): Partial<Record<JobType, z.infer<T>>> {
  if (raw === undefined) return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON object keyed by job type`);
  }
  const parsed = z.partialRecord(z.enum(jobTypes as [JobType, ...JobType[]]), schema).safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ConfigError(`${name}: ${i.path.join('.') || '(root)'}: ${i.message} (job types: ${jobTypes.join(', ')})`);
  }
  return parsed.data as Partial<Record<JobType, z.infer<T>>>;
}

const boolFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/**
 * `jobTypes`: the names of the registered job types (`registry.names`), which `JOB_BUDGETS`
 * and `CONCURRENCY_LIMITS` may name.
 */
/** `fastPathTypes`: the types that declare a fast path (`registry.fastPathTypes`); unchecked when not given. */
export function loadConfig(env: NodeJS.ProcessEnv, opts: ConfigOptions): Config {
  const modeRaw = opts.mode ?? env.DURABLE_JOBS_MODE ?? 'production';
  if (modeRaw !== 'dev' && modeRaw !== 'production') throw new ConfigError('DURABLE_JOBS_MODE must be "dev" or "production"');
  const mode: Mode = modeRaw;
  const codeVersion = opts.codeVersion ?? (env.CODE_VERSION || undefined) ?? detectCodeVersion(PACKAGE_VERSION);
  const schema = z.object({
    HTTP_PORT: port('HTTP_PORT', 8080),
    HTTP_HOST: z.string().min(1).optional(),
    TEMPORAL_ADDRESS: z
      .string()
      .regex(/^[^\s:]+:\d+$/, 'TEMPORAL_ADDRESS must be host:port')
      .optional(),
    TEMPORAL_NAMESPACE: z.string().min(1).optional(),
    TEMPORAL_UI_PORT: port('TEMPORAL_UI_PORT', 8233),
    TEMPORAL_CLI_PATH: z.string().min(1).optional(),
    TEMPORAL_API_KEY: z.string().min(1).optional(),
    TEMPORAL_TLS: boolFlag,
    TEMPORAL_TLS_CERT_PATH: z.string().min(1).optional(),
    TEMPORAL_TLS_KEY_PATH: z.string().min(1).optional(),
    TASK_QUEUE: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,200}$/, 'TASK_QUEUE must be 1-200 of A-Z a-z 0-9 . _ -')
      .default(DEFAULT_TASK_QUEUE),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must start with postgres:// or postgresql://')
      .optional(),
    PROVIDER_URL: z.url({ error: 'PROVIDER_URL must be an http(s) URL' }).optional(),
    PROVIDER_FALLBACK_URL: z.url({ error: 'PROVIDER_FALLBACK_URL must be an http(s) URL' }).optional(),
    SIM_PORT: port('SIM_PORT', 8090),
    SIM_WEBHOOK_URL: z.url({ error: 'SIM_WEBHOOK_URL must be an http(s) URL' }).optional(),
    DJ_API_URL: z.url({ error: 'DJ_API_URL must be an http(s) URL' }).optional(),
    WORKERS: z.coerce
      .number()
      .int('WORKERS must be a whole number')
      .min(0, 'WORKERS must be 0-16')
      .max(16, 'WORKERS must be 0-16')
      .default(1),
    SEED_TENANTS: z.string().optional(),
    SEED_HIGH_PRIORITY_TENANTS: z.string().optional(),
    ADMIN_API_KEY: z.string().optional(),
    ADMIN_API_KEYS: z.string().optional(),
    TEMPORAL_UI_URL: z
      .union([z.literal('none'), z.url().regex(/^https?:\/\//)], { error: 'TEMPORAL_UI_URL must be an http(s) URL, or "none"' })
      .optional(),
    TRACE_UI_URL: z
      .url({ error: 'TRACE_UI_URL must be an http(s) URL, e.g. http://127.0.0.1:16686/trace/{traceId}' })
      .regex(/^https?:\/\//, 'TRACE_UI_URL must be an http(s) URL')
      .optional(),
    WEBHOOK_SECRETS: z.string().default(''),
    WEBHOOK_SECRETS_FILE: z.string().min(1, 'WEBHOOK_SECRETS_FILE must be a file path').optional(),
    JOB_BUDGETS: z.string().optional(),
    FAST_PATH_JOB_TYPES: z.string().optional(),
    CONCURRENCY_LIMITS: z.string().optional(),
    RETENTION_DAYS: z.coerce
      .number({ error: 'RETENTION_DAYS must be a number of days' })
      .positive('RETENTION_DAYS must be > 0')
      .default(30),
    RETENTION_DAYS_BY_TABLE: z.string().optional(),
    IDEMPOTENCY_WINDOW_DAYS: z.coerce
      .number({ error: 'IDEMPOTENCY_WINDOW_DAYS must be a number of days' })
      .positive('IDEMPOTENCY_WINDOW_DAYS must be > 0')
      .default(7),
    RETENTION_BATCH_SIZE: z.coerce
      .number()
      .int('RETENTION_BATCH_SIZE must be a whole number')
      .min(1, 'RETENTION_BATCH_SIZE must be 1-10000')
      .max(10_000, 'RETENTION_BATCH_SIZE must be 1-10000')
      .default(500),
    WORKER_SHUTDOWN_GRACE_SECONDS: z.coerce
      .number({ error: 'WORKER_SHUTDOWN_GRACE_SECONDS must be a number of seconds' })
      .min(0, 'WORKER_SHUTDOWN_GRACE_SECONDS must be 0-3600')
      .max(3600, 'WORKER_SHUTDOWN_GRACE_SECONDS must be 0-3600')
      .default(DEFAULT_WORKER_SHUTDOWN_GRACE_SECONDS),
    PG_POOL_SIZE: count('PG_POOL_SIZE', 1, 1000).default(10),
    DATABASE_MIGRATION_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'DATABASE_MIGRATION_URL must start with postgres:// or postgresql://')
      .optional(),
    CONCURRENCY_TOTAL: count('CONCURRENCY_TOTAL', 1, 100_000).default(128),
    WORKER_ACTIVITY_SLOTS: count('WORKER_ACTIVITY_SLOTS', 1, 10_000).default(50),
    WORKER_WORKFLOW_SLOTS: count('WORKER_WORKFLOW_SLOTS', 2, 10_000).optional(),
    WORKER_CACHED_WORKFLOWS: count('WORKER_CACHED_WORKFLOWS', 0, 1_000_000).optional(),
    WORKER_WORKFLOW_POLLERS: count('WORKER_WORKFLOW_POLLERS', 2, 100).optional(),
    WORKER_ACTIVITY_POLLERS: count('WORKER_ACTIVITY_POLLERS', 1, 100).optional(),
    INTAKE_START_MARK_MS: count('INTAKE_START_MARK_MS', 0, 10_000).default(100),
    TLS_CERT_FILE: z.string().min(1).optional(),
    TLS_KEY_FILE: z.string().min(1).optional(),
    SESSION_IDLE_SECONDS: count('SESSION_IDLE_SECONDS', 1, 86_400).default(900),
    SESSION_ABSOLUTE_SECONDS: count('SESSION_ABSOLUTE_SECONDS', 1, 30 * 86_400).default(28_800),
    SESSION_COOKIE_SECURE: z.enum(['true', 'false'], { error: 'SESSION_COOKIE_SECURE must be true or false' }).optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  });
  // Empty strings mean "unset": `FOO= npm start` must not turn into an invalid value.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  const httpPort = e.HTTP_PORT;
  // Dev mode's known key belongs to operator "admin", unless named keys are configured.
  const adminApiKey = e.ADMIN_API_KEY ?? (mode === 'dev' && e.ADMIN_API_KEYS === undefined ? DEV_ADMIN_KEY : undefined);
  if (adminApiKey !== undefined && adminApiKey.length < MIN_CONFIGURED_KEY_LENGTH && !(mode === 'dev' && adminApiKey === DEV_ADMIN_KEY))
    throw new ConfigError(`invalid configuration: ADMIN_API_KEY must be at least ${MIN_CONFIGURED_KEY_LENGTH} characters`);
  const seedTenants = withHighPriority(
    parseTenants(
      e.SEED_TENANTS ?? (mode === 'dev' ? `${DEMO_TENANT.tenantId}=${DEMO_TENANT.apiKey}` : ''),
      mode === 'dev' ? DEMO_TENANT : undefined,
    ),
    // The dev demo tenant may try priority high (load shedding in `npm start`); no one else by default.
    e.SEED_HIGH_PRIORITY_TENANTS ?? (mode === 'dev' && e.SEED_TENANTS === undefined ? DEMO_TENANT.tenantId : ''),
  );
  const adminKeys = parseAdminKeys(e.ADMIN_API_KEYS ?? '', adminApiKey);
  const clash = seedTenants.find((t) => adminKeys.some((k) => k.keyHash === keyDigest(t.apiKey)));
  if (clash)
    throw new ConfigError(`the API key of tenant "${clash.tenantId}" is also an admin key; a tenant key never opens an admin route`);
  const profile = temporalProfile(cleaned as Record<string, string>, mode);
  const { address: profileAddress, ...temporalConnection } = profile.connectionOptions;
  if (e.TEMPORAL_ADDRESS === undefined && profileAddress !== undefined && !/^[^\s:]+:\d+$/.test(profileAddress)) {
    throw new ConfigError(`invalid configuration: the Temporal profile's address must be host:port`);
  }
  const tls = temporalConnection.tls;
  const httpTls = httpTlsFrom(e.TLS_CERT_FILE, e.TLS_KEY_FILE);
  return {
    mode,
    httpPort,
    httpHost: e.HTTP_HOST ?? (mode === 'dev' ? '127.0.0.1' : '0.0.0.0'),
    httpLimits: httpLimitsFrom(cleaned),
    adminListener: adminListenerFrom(cleaned, httpPort),
    httpTls,
    sessions: {
      idleSeconds: Math.min(e.SESSION_IDLE_SECONDS, e.SESSION_ABSOLUTE_SECONDS),
      absoluteSeconds: e.SESSION_ABSOLUTE_SECONDS,
      secureCookie: e.SESSION_COOKIE_SECURE === undefined ? httpTls !== undefined : e.SESSION_COOKIE_SECURE === 'true',
    },
    temporalAddress: e.TEMPORAL_ADDRESS ?? profileAddress,
    temporalNamespace: e.TEMPORAL_NAMESPACE ?? profile.namespace ?? 'default',
    temporalUiPort: e.TEMPORAL_UI_PORT,
    temporalCliPath: e.TEMPORAL_CLI_PATH,
    temporalApiKey: temporalConnection.apiKey,
    temporalTls: tls !== undefined && tls !== false,
    temporalTlsCertPath: cleaned.TEMPORAL_TLS_CLIENT_CERT_PATH ?? e.TEMPORAL_TLS_CERT_PATH,
    temporalTlsKeyPath: cleaned.TEMPORAL_TLS_CLIENT_KEY_PATH ?? e.TEMPORAL_TLS_KEY_PATH,
    temporalConnection,
    taskQueue: e.TASK_QUEUE,
    databaseUrl: e.DATABASE_URL,
    providerUrl: e.PROVIDER_URL?.replace(/\/+$/, ''),
    providerFallbackUrl: e.PROVIDER_FALLBACK_URL?.replace(/\/+$/, ''),
    simPort: e.SIM_PORT,
    simWebhookUrl: e.SIM_WEBHOOK_URL ?? `http://127.0.0.1:${httpPort}/v1/webhooks/sim`,
    apiUrl: (e.DJ_API_URL ?? `${httpTls ? 'https' : 'http'}://127.0.0.1:${httpPort}`).replace(/\/+$/, ''),
    workers: e.WORKERS,
    seedTenants,
    adminApiKey,
    adminKeys,
    traceUiUrl: e.TRACE_UI_URL,
    temporalUiUrl:
      e.TEMPORAL_UI_URL === 'none'
        ? undefined
        : (e.TEMPORAL_UI_URL ?? (mode === 'dev' ? `http://127.0.0.1:${e.TEMPORAL_UI_PORT}` : undefined))?.replace(/\/+$/, ''),
    webhookSecrets: webhookSecretsFrom(e.WEBHOOK_SECRETS, e.WEBHOOK_SECRETS_FILE),
    webhookSecretsSource: { env: e.WEBHOOK_SECRETS, file: e.WEBHOOK_SECRETS_FILE },
    logLevel: e.LOG_LEVEL,
    serverSecret: serverSecretFrom(cleaned.DURABLE_JOBS_SECRET, cleaned.DURABLE_JOBS_SECRET_FILE),
    payloadCodecKeys: payloadCodecKeysFrom(cleaned.PAYLOAD_CODEC_KEYS, cleaned.PAYLOAD_CODEC_KEYS_FILE),
    jobBudgets: perJobType('JOB_BUDGETS', e.JOB_BUDGETS, BUDGET_SCHEMA, opts.jobTypes),
    concurrencyLimits: perJobType('CONCURRENCY_LIMITS', e.CONCURRENCY_LIMITS, LIMITS_SCHEMA, opts.jobTypes),
    fastPathTypes: fastPathTypes(e.FAST_PATH_JOB_TYPES, opts.jobTypes, opts.fastPathTypes),
    codeVersion,
    workerShutdownGraceSeconds: e.WORKER_SHUTDOWN_GRACE_SECONDS,
    retention: retentionConfig(e.RETENTION_DAYS, e.IDEMPOTENCY_WINDOW_DAYS, e.RETENTION_BATCH_SIZE, e.RETENTION_DAYS_BY_TABLE),
    tuning: {
      pgPoolSize: e.PG_POOL_SIZE,
      migrationUrl: e.DATABASE_MIGRATION_URL,
      concurrencyTotal: e.CONCURRENCY_TOTAL,
      activitySlots: e.WORKER_ACTIVITY_SLOTS,
      workflowSlots: e.WORKER_WORKFLOW_SLOTS,
      cachedWorkflows: e.WORKER_CACHED_WORKFLOWS,
      workflowPollers: e.WORKER_WORKFLOW_POLLERS,
      activityPollers: e.WORKER_ACTIVITY_POLLERS,
      startMarkWindowMs: e.INTAKE_START_MARK_MS,
    },
  };
}

/** A whole number in [min, max], named in the message. */
function count(name: string, min: number, max: number) {
  return z.coerce
    .number({ error: `${name} must be a whole number` })
    .int(`${name} must be a whole number`)
    .min(min, `${name} must be ${min}-${max}`)
    .max(max, `${name} must be ${min}-${max}`);
}

/**
 * The Temporal client profile through @temporalio/envconfig (see Config.temporalConnection).
 * TEMPORAL_TLS_CERT_PATH / TEMPORAL_TLS_KEY_PATH, this project's earlier names, stand in for the
 * standard TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH. The certificate files
 * are read here, so a wrong path stops the process at start.
 */
function temporalProfile(env: Record<string, string>, mode: Mode): ClientConnectConfig {
  const vars = { ...env };
  if (vars.TEMPORAL_TLS_CERT_PATH && !vars.TEMPORAL_TLS_CLIENT_CERT_PATH) vars.TEMPORAL_TLS_CLIENT_CERT_PATH = vars.TEMPORAL_TLS_CERT_PATH;
  if (vars.TEMPORAL_TLS_KEY_PATH && !vars.TEMPORAL_TLS_CLIENT_KEY_PATH) vars.TEMPORAL_TLS_CLIENT_KEY_PATH = vars.TEMPORAL_TLS_KEY_PATH;
  const disableFile = mode === 'dev' && vars.TEMPORAL_PROFILE === undefined && vars.TEMPORAL_CONFIG_FILE === undefined;
  try {
    const loaded = loadClientConnectConfig({ overrideEnvVars: vars, disableFile });
    // envconfig 1.24 returns certificates as Uint8Array; the client Connection (grpc-js
    // createSsl) accepts only Buffers and throws "must be a Buffer" otherwise.
    const tls = loaded.connectionOptions.tls;
    if (tls && typeof tls === 'object') {
      const buf = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b));
      loaded.connectionOptions.tls = {
        ...tls,
        serverRootCACertificate: buf(tls.serverRootCACertificate),
        clientCertPair: tls.clientCertPair ? { crt: buf(tls.clientCertPair.crt)!, key: buf(tls.clientCertPair.key)! } : undefined,
      };
    }
    return loaded;
  } catch (err) {
    throw new ConfigError(
      `invalid Temporal client profile (TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE / TEMPORAL_TLS_*): ${(err as Error).message}`,
    );
  }
}
