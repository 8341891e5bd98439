/**
 * The operational endpoints, `/metrics`, `/openapi.json` and the detailed `/readyz` (issue 39 §2,
 * F7). On the public listener they told anyone the global backlog and rates, every admin route,
 * the exact commit, and raw dependency errors (`connect ECONNREFUSED <host:port>`, role and
 * database names). Now:
 *
 * - a second listener, on loopback by default (`ADMIN_LISTEN_HOST` / `ADMIN_LISTEN_PORT`), serves
 *   all three without a key: only the host, a sidecar or a tunnel reaches it;
 * - on the public listener `/metrics` and `/openapi.json` need an admin key (API.md lists
 *   `/metrics` there: a Prometheus outside the host scrapes it with `authorization`), and
 *   `/readyz` answers ready or not, without its reasons, unless an admin key is sent.
 *
 * A team that mounts the routes in its own Fastify app (`durableJobsPlugin`) gets the public
 * behaviour; `startAdminListener` adds the second listener to any app the routes are on.
 */
import type { Client, Connection } from '@temporalio/client';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import type { AdminListenerConfig, HttpLimits } from '../lib/http-limits.js';
import type { Logger } from '../lib/logger.js';
import { temporalAcceptsJobs } from '../lib/temporal.js';
import { requireAdmin, type AdminKeys } from './auth.js';
import { clientErrorHandler } from './client-errors.js';
import { applyServerLimits, fastifyLimitOptions } from './limits.js';
import { problem, sendProblem } from './problems.js';

/** Each dependency's check: `ok`, or its error message (for operators only). */
export interface Readiness {
  ready: boolean;
  postgres: string;
  temporal: string;
}

/** What the operational endpoints answer, whichever listener serves them. */
export interface OpsEndpoints {
  metrics(): Promise<{ contentType: string; text: string }>;
  /** Postgres reachable and Temporal would accept a job (namespace, search attributes, history). */
  readiness(): Promise<Readiness>;
  openApi(): unknown;
}

export function createOpsEndpoints(deps: { pool: pg.Pool; temporal: Client; registry: Registry; openApi: () => unknown }): OpsEndpoints {
  const check = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: Error) => e.message,
    );
  return {
    metrics: async () => ({ contentType: deps.registry.contentType, text: await deps.registry.metrics() }),
    async readiness() {
      const [postgres, temporal] = await Promise.all([
        check(deps.pool.query('SELECT 1')),
        check(temporalAcceptsJobs(deps.temporal.connection as Connection, deps.temporal.options.namespace)),
      ]);
      return { ready: postgres === 'ok' && temporal === 'ok', postgres, temporal };
    },
    openApi: deps.openApi,
  };
}

/** The answer of a `/readyz` that may show its reasons: 200 with each check, or 503 naming them. */
function detailedReadiness(reply: FastifyReply, r: Readiness) {
  if (r.ready) return reply.send({ status: 'ready', postgres: r.postgres, temporal: r.temporal });
  return sendProblem(
    reply,
    problem(503, 'not-ready', 'Not ready', `postgres: ${r.postgres}; temporal: ${r.temporal}`, { retryAfterSeconds: 5 }),
  );
}

const opsByApp = new WeakMap<FastifyInstance, OpsEndpoints>();

/** The operational endpoints registered on `app` by `registerOpsRoutes` (for `startAdminListener`). */
export function opsEndpointsOf(app: FastifyInstance): OpsEndpoints | undefined {
  return opsByApp.get(app);
}

/** `/healthz`, `/readyz`, `/metrics` and `/openapi.json` on the public listener (see the module comment). */
export function registerOpsRoutes(app: FastifyInstance, ops: OpsEndpoints, admin: AdminKeys): void {
  opsByApp.set(app, ops);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (req, reply) => {
    // A load balancer sends no key and learns ready or not; an operator's key shows why.
    if (req.headers.authorization !== undefined) {
      if (!requireAdmin(admin, req, reply)) return reply;
      return detailedReadiness(reply, await ops.readiness());
    }
    if ((await ops.readiness()).ready) return { status: 'ready' };
    return sendProblem(
      reply,
      problem(503, 'not-ready', 'Not ready', 'a dependency is unavailable (reasons: /readyz on the admin listener, or with an admin key)', {
        retryAfterSeconds: 5,
      }),
    );
  });
  app.get('/openapi.json', async (req, reply) => {
    if (!requireAdmin(admin, req, reply)) return reply;
    return ops.openApi();
  });
  app.get('/metrics', async (req, reply) => {
    if (!requireAdmin(admin, req, reply)) return reply;
    const m = await ops.metrics();
    return reply.type(m.contentType).send(m.text);
  });
}

export interface AdminListener {
  /** `http://host:port` as bound (a port of 0 resolved). */
  url: string;
  close(): Promise<void>;
}

/** The second listener: the operational endpoints without a key, with the public listener's limits. */
export async function listenAdmin(
  ops: OpsEndpoints,
  o: { host: string; port: number; limits: HttpLimits; log: Logger },
): Promise<AdminListener> {
  // Warnings and errors only (or less, if the process logs less): a scrape every few seconds
  // would be two request lines each.
  const quieter = o.log.levelVal >= o.log.levels.values.warn! ? o.log.level : 'warn';
  const log = o.log.child({ listener: 'admin' }, { level: quieter }) as unknown as FastifyBaseLogger;
  const app = Fastify({
    loggerInstance: log,
    clientErrorHandler: clientErrorHandler(log),
    ...fastifyLimitOptions(o.limits),
  });
  applyServerLimits(app.server, o.limits, o.log);
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff').header('Cache-Control', 'no-store');
    return payload;
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(
      reply,
      problem(
        404,
        'not-found',
        'Not found',
        `no route ${req.method} ${req.url.split('?')[0]} (this listener serves /metrics, /openapi.json, /readyz, /healthz)`,
      ),
    ),
  );
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => detailedReadiness(reply, await ops.readiness()));
  app.get('/openapi.json', async () => ops.openApi());
  app.get('/metrics', async (_req, reply) => {
    const m = await ops.metrics();
    return reply.type(m.contentType).send(m.text);
  });
  await app.listen({ host: o.host, port: o.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  return { url: `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`, close: () => app.close() };
}

/**
 * The admin listener of `app` (its durable-jobs routes) as `ADMIN_LISTEN_*` configure it;
 * undefined when switched off, or when its default port is taken (logged: the endpoints stay
 * reachable with an admin key). A port set explicitly that cannot be bound is an error.
 */
export async function startAdminListener(
  app: FastifyInstance,
  c: AdminListenerConfig,
  limits: HttpLimits,
  log: Logger,
): Promise<AdminListener | undefined> {
  if (!c.enabled) return undefined;
  const ops = opsEndpointsOf(app);
  if (!ops) throw new Error('startAdminListener: the durable-jobs routes are not registered on this app');
  try {
    const l = await listenAdmin(ops, { host: c.host, port: c.port, limits, log });
    log.info({ url: l.url }, 'admin listener: /metrics, /openapi.json and the detailed /readyz, without a key');
    return l;
  } catch (err) {
    if (c.required) throw err;
    log.warn(
      { err: { message: (err as Error).message, code: (err as NodeJS.ErrnoException).code }, host: c.host, port: c.port },
      'admin listener not started (set ADMIN_LISTEN_PORT to a free port, or 0); /metrics, /openapi.json and the detailed /readyz need an admin key on the API port',
    );
    return undefined;
  }
}
