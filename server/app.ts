import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type pg from 'pg';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { JobRegistry } from '../job-api/registry.js';
import { taskQueueOf } from '../job-api/define.js';
import { createDeadLetterService } from '../services/dead-letters.js';
import { createOutboxService } from '../services/outbox.js';
import type { JobsClient } from '../services/intake.js';
import { createWebhookService } from '../services/webhooks.js';
import { findUnstorableField, jsonNestedDeeperThan } from '../lib/json-safety.js';
import type { Logger } from '../lib/logger.js';
import type { OperatorKey } from '../lib/config.js';
import { createAdminJobsService } from '../services/admin-jobs.js';
import { createTenantsAdmin } from '../services/tenants.js';
import { adminKeyring, authorizeAdminRoutes } from './auth.js';
import { principalOf, redactForViewer, trackRoutes } from './roles.js';
import { createSessions, type SessionOptions } from './sessions.js';
import { registerSessionRoutes } from './routes-session.js';
import { createAuthGuard, type AuthThrottleOptions } from './auth-throttle.js';
import { clientErrorHandler } from './client-errors.js';
import { registerConsole } from './console.js';
import { registerScanMetrics, registerTotalMetrics } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { createOpsEndpoints, registerOpsRoutes } from './admin-listener.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../lib/http-limits.js';
import { applyServerLimits, fastifyLimitOptions } from './limits.js';
import { noteUnavailable, problem, problemFromError, sendProblem } from './problems.js';
import { registerOutboxRoutes } from './routes-outbox.js';
import { registerDeadLetterRoutes } from './routes-dead-letters.js';
import { registerBulkRoutes } from './routes-bulk.js';
import { createBulkActionService } from '../services/bulk-actions.js';
import { registerAdminRoutes } from './routes-admin.js';
import { registerJobRoutes } from './routes-jobs.js';
import { registerOperatorRoutes } from './routes-operators.js';
import { registerTenantRoutes } from './routes-tenants.js';
import { registerTenantWebhookRoutes } from './routes-tenant-webhooks.js';
import { createTenantWebhooks } from '../services/tenant-webhooks.js';
import { registerTimelineRoutes } from './routes-timeline.js';
import { registerCodecRoutes } from './routes-codec.js';
import { registerWebhookRoutes } from './routes-webhooks.js';
import { registerScheduleRoutes } from './routes-schedules.js';
import { registerWebhookDeliveryRoutes } from './routes-webhook-deliveries.js';
import { createScheduleAdmin } from '../services/schedule-admin.js';
import { createWebhookKeyring, type WebhookKeyring } from './webhook-keyring.js';

export interface AppDeps {
  pool: pg.Pool;
  temporal: Client;
  jobs: JobsClient;
  /** The registered job types (validation, OpenAPI, dry runs, fallback switches). */
  jobTypes: JobRegistry;
  log: Logger;
  /** The admin keys, each naming its operator, hashed (`Config.adminKeys`). */
  adminKeys?: readonly OperatorKey[];
  /** A single admin key (older callers, tests): the key of operator "admin". */
  adminApiKey?: string;
  /** Base URL of the Temporal Web UI the console links to; undefined: no links. */
  temporalUiUrl?: string;
  /** `TRACE_UI_URL`: the timeline links a job's trace there. Default none. */
  traceUiUrl?: string;
  /**
   * source → `whsec_` secrets (first signs, all verify: rotation), or a keyring whose secrets
   * the entry point replaces while the API serves (SIGHUP, `server/webhook-keyring.ts`).
   */
  webhookSecrets: Record<string, string[]> | WebhookKeyring;
  version: string;
  /** Jobs task queue for replay workflows (dead letters). Default: the jobs client's queue. */
  taskQueue?: string;
  /** Failed-authentication throttling (server/auth-throttle.ts). Default 20 wrong keys per address and per key prefix a minute. */
  authThrottle?: AuthThrottleOptions;
  /**
   * How long one scrape's figures (health snapshot, metric totals) are reused by the next
   * scrapes of this process. Default 1000 ms: one Prometheus and several dashboards polling
   * at once cost one set of queries. 0: every scrape reads afresh (tests).
   */
  metricsCacheMs?: number;
  /** Request, header, idle and keep-alive timeouts and the connection cap (`buildApp` only). Default `DEFAULT_HTTP_LIMITS`. */
  httpLimits?: HttpLimits;
  /** The console's session timeouts and cookie (server/sessions.ts). Default 15 min idle, 8 h absolute, not `Secure` unless `tls`. */
  sessions?: SessionOptions;
  /** Serve HTTPS with this certificate chain and key (PEM; `TLS_CERT_FILE`, `TLS_KEY_FILE`). Default plain HTTP. `buildApp` only. */
  tls?: { cert: Buffer; key: Buffer };
  /**
   * The payload codec the workers and `temporal` run (`PAYLOAD_CODEC_KEYS`, `lib/payload-codec.ts`):
   * `/codec/encode` and `/codec/decode` serve it to the Web UI's origin and operators. Default none (pass-through).
   */
  payloadCodec?: PayloadCodec;
}

/** 256 KiB: the contract's body limit for job submissions. */
export const BODY_LIMIT = 256 * 1024;

export function buildApp(deps: AppDeps): FastifyInstance {
  const limits = deps.httpLimits ?? DEFAULT_HTTP_LIMITS;
  const app = Fastify({
    ...(deps.tls ? { https: { cert: deps.tls.cert, key: deps.tls.key } } : {}),
    loggerInstance: deps.log as unknown as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // A body trickled a byte at a time no longer holds its socket forever (F1, server/limits.ts).
    ...fastifyLimitOptions(limits),
    // What Node's HTTP parser refuses before any route (a control character in a header) is a problem too.
    clientErrorHandler: clientErrorHandler(deps.log as unknown as FastifyBaseLogger),
    // Request logs carry method, URL and status only (pino's default serializers): never
    // headers or bodies.
  });
  applyServerLimits(app.server, limits, deps.log);
  registerDurableJobs(app, deps);
  return app;
}

/**
 * Every route of the API and the console on `app`: the whole of `buildApp` but the server
 * itself, so a team can mount it in its own Fastify app (`server/index.ts`, `durableJobsPlugin`).
 * Its body parser, error and not-found handlers stay inside the context it is given.
 */
export function registerDurableJobs(app: FastifyInstance, deps: AppDeps): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Every admin route declares its role (server/roles.ts); the table lets a test walk them all.
  trackRoutes(app);
  const sessions = createSessions(deps.pool, { secureCookie: deps.tls !== undefined, ...deps.sessions });
  const guard = createAuthGuard(registry, deps.authThrottle);
  const admin = { ...adminKeyring(deps), guard, sessions };
  authorizeAdminRoutes(app, admin);
  // Viewers read no inputs, results or payloads, whichever admin route answers.
  app.addHook('preSerialization', async (req, _reply, payload) =>
    principalOf(req)?.role === 'viewer' ? redactForViewer(payload) : payload,
  );

  // Keep the raw bytes: webhook signatures are computed over them, not over re-serialised JSON.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    (req as { rawBody?: Buffer }).rawBody = body as Buffer;
    if ((body as Buffer).length === 0) return done(null, undefined);
    const text = (body as Buffer).toString('utf8');
    // Validation and storage walk the input recursively: a body nested thousands deep would overflow the stack (500).
    if (jsonNestedDeeperThan(text))
      return done(Object.assign(new Error('nested too deep'), { code: 'DJ_JSON_TOO_DEEP', statusCode: 400 }), undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(Object.assign(new Error('malformed JSON'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
    }
  });

  // Every answer: no MIME sniffing (a browser must never run a JSON body or a problem as HTML
  // or script). And, unless a route says otherwise (the console's assets: no-cache), no copy
  // kept anywhere: job results, dead letters, other tenants' jobs in admin reads and new keys
  // must not sit in a shared proxy's or a browser's cache (OWASP ASVS 8.1.1 / 14.4.4, F10).
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store');
    return payload;
  });

  // JSON only: Fastify's built-in text/plain parser made a text body a 400 validation error
  // instead of the documented 415 (F12).
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler((err, req, reply) => {
    noteUnavailable(req, err);
    const p = problemFromError(err);
    if (p.status >= 500) req.log.error({ err: { message: (err as Error).message, name: (err as Error).name } }, 'request failed');
    return sendProblem(reply, p);
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(reply, problem(404, 'not-found', 'Not found', `no route ${req.method} ${req.url.split('?')[0]}`)),
  );

  // Postgres cannot store NUL (or a lone surrogate) in text: an ID, filter or reason with one
  // can match nothing, and passing it on would fail the query with a 500 (and an alert) at will.
  // Say so precisely instead, for path parameters, query strings and body strings alike. The
  // webhook receiver is left out: its body is checked only after its signature is, over the raw
  // bytes, and its own service answers 400 for an event Postgres could not store.
  app.addHook('preValidation', async (req, reply) => {
    const where = [
      ['path parameter', req.params],
      ['query parameter', req.query],
      ...(req.routeOptions.url?.startsWith('/v1/webhooks/') ? [] : [['body field', req.body] as const]),
    ] as const;
    for (const [what, value] of where) {
      const issue = findUnstorableField(value);
      if (issue)
        return sendProblem(
          reply,
          problem(
            400,
            'validation-error',
            'Invalid request',
            `the ${what} ${issue.path} contains a NUL character or an unpaired surrogate`,
            {
              errors: [issue],
            },
          ),
        );
    }
  });

  // /metrics, /openapi.json and the reasons of /readyz: an admin key here, none on the admin listener (F7).
  registerOpsRoutes(
    app,
    createOpsEndpoints({ pool: deps.pool, temporal: deps.temporal, registry, openApi: () => openApiDocument(deps.version, deps.jobTypes) }),
    admin,
  );
  // Before the job routes: its onSend hook counts the intake's 503s.
  registerAdminRoutes(app, registry, {
    pool: deps.pool,
    temporal: deps.temporal,
    taskQueues: deps.jobTypes.taskQueues(deps.jobs.taskQueue),
    jobTypeQueues: Object.fromEntries(
      deps.jobTypes.modules.map((m) => [m.definition.name, taskQueueOf(m.definition, deps.jobs.taskQueue)]),
    ),
    adminApiKey: admin,
    log: deps.log,
    fallbackTypes: deps.jobTypes.fallbackTypes,
    metricsCacheMs: deps.metricsCacheMs,
  });
  registerJobRoutes(app, { pool: deps.pool, jobs: deps.jobs, guard });
  registerTimelineRoutes(app, {
    pool: deps.pool,
    temporal: deps.temporal,
    taskQueue: deps.jobs.taskQueue,
    adminApiKey: admin,
    traceUiUrl: deps.traceUiUrl,
  });
  const deadLetters = createDeadLetterService({
    pool: deps.pool,
    temporal: deps.temporal,
    jobTypes: deps.jobTypes,
    taskQueue: deps.taskQueue ?? deps.jobs.taskQueue,
    codeVersion: deps.version,
  });
  registerDeadLetterRoutes(app, { deadLetters, adminApiKey: admin });
  const bulk = createBulkActionService({
    pool: deps.pool,
    temporal: deps.temporal,
    jobs: deps.jobTypes,
    taskQueue: deps.taskQueue ?? deps.jobs.taskQueue,
    deadLetters,
  });
  registerBulkRoutes(app, { pool: deps.pool, bulk, adminApiKey: admin });
  const webhookKeyring =
    typeof (deps.webhookSecrets as Partial<WebhookKeyring>).verifiers === 'function'
      ? (deps.webhookSecrets as WebhookKeyring)
      : createWebhookKeyring(deps.webhookSecrets as Record<string, string[]>);
  registerWebhookRoutes(app, { webhooks: createWebhookService(deps), adminApiKey: admin, webhookKeyring }, registry);
  registerScanMetrics(registry, deps.pool);
  registerTotalMetrics(registry, { pool: deps.pool, jobTypes: deps.jobTypes.names, log: deps.log, cacheMs: deps.metricsCacheMs });
  const outbox = createOutboxService({
    pool: deps.pool,
    temporal: deps.temporal,
    taskQueue: deps.taskQueue ?? deps.jobs.taskQueue,
    jobTypes: deps.jobTypes,
    log: deps.log,
  });
  registerOutboxRoutes(app, { outbox, adminApiKey: admin });
  registerOperatorRoutes(app, {
    jobs: createAdminJobsService({ pool: deps.pool }),
    adminApiKey: admin,
    temporalUi: deps.temporalUiUrl ? { url: deps.temporalUiUrl, namespace: deps.temporal.options.namespace } : null,
  });
  registerTenantRoutes(app, { tenants: createTenantsAdmin(deps.pool), adminApiKey: admin });
  registerTenantWebhookRoutes(app, { webhooks: createTenantWebhooks(deps.pool), adminApiKey: admin });
  registerSessionRoutes(app, { sessions });
  registerCodecRoutes(app, { codec: deps.payloadCodec, adminApiKey: admin, temporalUiUrl: deps.temporalUiUrl });
  registerScheduleRoutes(app, {
    schedules: createScheduleAdmin({ pool: deps.pool, temporal: deps.temporal, jobTypes: deps.jobTypes, prefix: deps.jobs.taskQueue }),
    adminApiKey: admin,
  });
  registerWebhookDeliveryRoutes(app, { pool: deps.pool, adminApiKey: admin });
  registerConsole(app);
}
