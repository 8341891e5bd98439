/**
 * Time and room limits of the API's listeners (issue 39 §1, F1). Fastify 5 sets no request or
 * idle timeout, and nothing capped connections: a client that sent its headers and then trickled
 * its body a byte at a time kept a socket and its file descriptor for as long as it liked, with
 * no key (the body is read before any route, so before authentication).
 *
 * Now the whole request must arrive within `requestTimeoutMs` (408 `request-timeout` through
 * server/client-errors.ts, then the connection is closed), a connection idle for
 * `idleTimeoutMs` is closed, and past `maxConnections` a new connection is closed as soon as it
 * is accepted, so slow clients exhaust that room before the process's open-file limit.
 * Values and defaults: lib/http-limits.ts; docs/security-limits.md.
 */
import type { Server } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { HttpLimits } from '../lib/http-limits.js';
import type { Logger } from '../lib/logger.js';

/**
 * How often Node looks for requests past their header or request deadline. Its default, 30 s,
 * let a 30 s timeout take up to 60 s; a quarter of the headers timeout (within 0.25-5 s) keeps
 * the overshoot small, at the cost of one walk over the open connections per look.
 */
export function connectionsCheckingIntervalMs(l: HttpLimits): number {
  return Math.min(5_000, Math.max(250, Math.floor(l.headersTimeoutMs / 4)));
}

/** The Fastify options that carry the limits (Node's `headersTimeout` goes through `http`). */
export function fastifyLimitOptions(l: HttpLimits): Pick<
  FastifyServerOptions,
  'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout'
> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number };
} {
  return {
    requestTimeout: l.requestTimeoutMs,
    connectionTimeout: l.idleTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    http: {
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalMs(l),
    },
  };
}

/**
 * Caps the server's open connections, and sets the header and request deadlines on the server
 * itself too (they hold even where Fastify builds the server without the `http` options, as it
 * does for HTTPS). A refused connection is closed by Node before any byte is read (no answer is
 * possible). A warning says so at most once a minute, with how many were refused since the last
 * one: an operator sees the cap reached without a log line per connection.
 */
export function applyServerLimits(server: Server, l: HttpLimits, log?: Logger): void {
  server.headersTimeout = l.headersTimeoutMs;
  server.requestTimeout = l.requestTimeoutMs;
  server.maxConnections = l.maxConnections;
  if (!log) return;
  let refused = 0;
  let lastWarning = -Infinity;
  server.on('drop', () => {
    refused++;
    const t = Date.now();
    if (t - lastWarning < 60_000) return;
    log.warn(
      { event: 'connections_refused', refused, maxConnections: l.maxConnections },
      'connection cap reached: new connections are closed unanswered (HTTP_MAX_CONNECTIONS)',
    );
    refused = 0;
    lastWarning = t;
  });
}
