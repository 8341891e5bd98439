/**
 * How long the API waits for a client, how many connections it keeps, and where its operational
 * endpoints listen (issue 39 §1 F1, §2 F7), parsed for lib/config.ts (the only reader of the
 * environment). docs/security-limits.md explains each value and the proxy timeouts to match.
 */
import { ConfigError } from './errors.js';

/** Timeouts and the connection cap of an HTTP listener. Each default is stated. */
export interface HttpLimits {
  /**
   * `HTTP_REQUEST_TIMEOUT_MS`: the whole request, headers and body, must arrive within this,
   * else 408 and the connection is closed (a body trickled a byte at a time held a socket
   * forever: F1). Default 30,000: a 256 KiB body needs about 70 kbit/s.
   */
  requestTimeoutMs: number;
  /** `HTTP_HEADERS_TIMEOUT_MS`: the headers alone (slowloris). At most the request timeout. Default 15,000. */
  headersTimeoutMs: number;
  /**
   * `HTTP_IDLE_TIMEOUT_MS`: a connection on which nothing moves for this long is closed
   * (Fastify's `connectionTimeout`, Node's `server.timeout`). Longer than any answer takes.
   * Default 120,000.
   */
  idleTimeoutMs: number;
  /**
   * `HTTP_KEEP_ALIVE_TIMEOUT_MS`: how long an idle keep-alive connection waits for its next
   * request. Default 72,000 (Fastify's: above the 60 s idle timeout of common load balancers, so
   * the balancer, not the API, closes first and no request races a close).
   */
  keepAliveTimeoutMs: number;
  /**
   * `HTTP_MAX_CONNECTIONS`: connections open at once; past it a new connection is closed at
   * once (before any byte is read). Default 4,096: far above what 2 cores serve, far below the
   * open-file limit, so slow clients run out of room before the process runs out of files.
   */
  maxConnections: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = Object.freeze({
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 15_000,
  idleTimeoutMs: 120_000,
  keepAliveTimeoutMs: 72_000,
  maxConnections: 4_096,
});

/**
 * The second listener with `/metrics`, `/openapi.json` and the detailed `/readyz`, unauthenticated
 * (F7): on loopback by default, so only the host (a Prometheus agent, a sidecar, an operator's
 * SSH tunnel) reaches it. On the public listener the same three need an admin key (`/readyz`
 * answers without one, with its verdict only).
 */
export interface AdminListenerConfig {
  /** `ADMIN_LISTEN_HOST`. Default 127.0.0.1. */
  host: string;
  /**
   * `ADMIN_LISTEN_PORT`: 0 picks a free port (logged). Default 9081: a fixed port, so a
   * Prometheus configuration can name it (a port derived from HTTP_PORT could take the port the
   * next API process on the host was given).
   */
  port: number;
  /**
   * `ADMIN_LISTEN_PORT` was set: a port that cannot be bound stops the API. Unset, the default
   * port may be taken (two APIs on one host): the API then says so and serves without it.
   */
  required: boolean;
  /** `ADMIN_LISTEN_PORT=off`: no second listener (the endpoints stay reachable with an admin key). */
  enabled: boolean;
}

/** See `AdminListenerConfig.port`. */
export const DEFAULT_ADMIN_PORT = 9081;

const VARIABLES = {
  requestTimeoutMs: 'HTTP_REQUEST_TIMEOUT_MS',
  headersTimeoutMs: 'HTTP_HEADERS_TIMEOUT_MS',
  idleTimeoutMs: 'HTTP_IDLE_TIMEOUT_MS',
  keepAliveTimeoutMs: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  maxConnections: 'HTTP_MAX_CONNECTIONS',
} as const satisfies Record<keyof HttpLimits, string>;

/** Bounds: a timeout under a second would cut ordinary clients; none may be switched off (0). */
const RANGES: Record<keyof HttpLimits, [number, number]> = {
  requestTimeoutMs: [1_000, 3_600_000],
  headersTimeoutMs: [1_000, 3_600_000],
  idleTimeoutMs: [1_000, 3_600_000],
  keepAliveTimeoutMs: [1_000, 3_600_000],
  maxConnections: [16, 1_000_000],
};

function whole(env: Record<string, string | undefined>, name: string, [min, max]: [number, number], fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new ConfigError(`${name} must be a whole number ${min}-${max}; got "${raw.slice(0, 20)}"`);
  return n;
}

/** `HTTP_*` limits from the environment (empty means unset); throws a ConfigError naming the variable. */
export function httpLimitsFrom(env: Record<string, string | undefined>): HttpLimits {
  const out = Object.fromEntries(
    (Object.keys(VARIABLES) as (keyof HttpLimits)[]).map((k) => [k, whole(env, VARIABLES[k], RANGES[k], DEFAULT_HTTP_LIMITS[k])]),
  ) as unknown as HttpLimits;
  // Node refuses a headers timeout above the request timeout (the request includes its headers).
  if (out.headersTimeoutMs > out.requestTimeoutMs)
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS (${out.headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${out.requestTimeoutMs}): the request includes its headers`,
    );
  return out;
}

/** `ADMIN_LISTEN_HOST` / `ADMIN_LISTEN_PORT` (a port, 0 for a free one, or `off`). */
export function adminListenerFrom(env: Record<string, string | undefined>, httpPort: number): AdminListenerConfig {
  const raw = env.ADMIN_LISTEN_PORT?.trim();
  const host = env.ADMIN_LISTEN_HOST?.trim() || '127.0.0.1';
  if (raw === 'off') return { host, port: 0, required: false, enabled: false };
  if (raw === undefined || raw === '')
    return { host, port: httpPort === DEFAULT_ADMIN_PORT ? 0 : DEFAULT_ADMIN_PORT, required: false, enabled: true };
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535)
    throw new ConfigError(`ADMIN_LISTEN_PORT must be a port number (0-65535, 0 picks a free one) or "off"; got "${raw.slice(0, 20)}"`);
  if (port !== 0 && port === httpPort) throw new ConfigError(`ADMIN_LISTEN_PORT must differ from HTTP_PORT (${httpPort})`);
  return { host, port, required: true, enabled: true };
}
