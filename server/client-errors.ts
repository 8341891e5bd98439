import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { problem, type Problem } from './problems.js';

/**
 * What Node's HTTP parser refuses before any route runs (a header value with CR, LF, NUL, DEL
 * or another control character, a request line it cannot read, headers over the size limit,
 * a request, headers or body, that took too long to arrive: server/limits.ts), as the RFC 9457
 * problem every other error is.
 * Fastify's default answers a plain `{"error":"Bad Request"}` instead.
 */
export function clientErrorProblem(err: NodeJS.ErrnoException): Problem {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return problem(408, 'request-timeout', 'Request timeout', 'the request did not arrive in time; nothing was recorded');
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return problem(
      431,
      'headers-too-large',
      'Request headers too large',
      'the request headers exceed the size limit; nothing was recorded',
    );
  return problem(
    400,
    'malformed-request',
    'Malformed HTTP request',
    'the request could not be parsed: a header value may contain a control character (CR, LF, NUL, DEL); nothing was recorded',
  );
}

/**
 * Fastify's `clientErrorHandler` (the server's 'clientError' event). The connection is
 * answered and closed (the parser cannot resync on it); the server and every other connection
 * keep running. Logs the parser's error code only: the bytes it refused may carry a key.
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    // A reset connection is gone: nothing to answer (https://nodejs.org/api/http.html#event-clienterror).
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const p = clientErrorProblem(err);
    log.info({ code: err.code, status: p.status }, 'request refused by the HTTP parser');
    // An answer already under way cannot be followed by another on the same bytes (Node's own
    // default handler makes the same check): a request timeout hit while a response was being
    // written only closes the connection.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(p);
    // Flushed, then closed: destroying at once could drop the answer.
    socket.end(
      `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  };
}
