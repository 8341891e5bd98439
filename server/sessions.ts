/**
 * The console's sessions (issue 39 §4, F10): the pasted admin key is traded once
 * (`POST /v1/admin/session`, server/routes-session.ts) for a random token in a cookie the page's
 * scripts cannot read, so the long-lived key is kept nowhere in the browser.
 *
 * - The cookie: `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends
 *   it), `Secure` when the API serves TLS (or `SESSION_COOKIE_SECURE`), `Path=/`, and a
 *   `Max-Age` of the absolute timeout.
 * - Only the token's SHA-256 is stored (schema/0028). Idle and absolute timeouts are decided by
 *   the database clock in the statement that touches the row (store/sessions.ts).
 * - Sign-out ends the row server-side: the cookie is worthless afterwards even if it was copied.
 * - Cross-site requests: SameSite=Strict already keeps the cookie off them; on top, an unsafe
 *   method (anything but GET / HEAD) through a session must carry the console's custom header
 *   (which a cross-site form cannot set, and no CORS preflight is ever granted) and, when the
 *   browser sends them, an `Origin` of this API's host and a `Sec-Fetch-Site` that is not cross-site.
 *   Bearer keys are no ambient credential and need none of this.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { deleteExpiredSessions, endSession, insertSession, touchSession } from '../store/sessions.js';
import { problem, type Problem } from './problems.js';

export const SESSION_COOKIE = 'dj_session';
/** The header the console sends with every unsafe request it makes through its session. */
export const CSRF_HEADER = 'x-durable-jobs-console';

export interface SessionOptions {
  /** Ends a session unused this long. Default 900 s (15 min). */
  idleSeconds?: number;
  /** Ends a session this long after it opened, used or not. Default 28,800 s (8 h). */
  absoluteSeconds?: number;
  /** Marks the cookie `Secure`. Default false (true when the API serves TLS: lib/config.ts). */
  secureCookie?: boolean;
}

/** What the auth check needs of a session: the key that opened it, or undefined when it is over. */
export interface SessionVerifier {
  verify(token: string): Promise<{ keyHash: string; keyId: string } | undefined>;
}

export interface Sessions extends SessionVerifier {
  readonly idleSeconds: number;
  readonly absoluteSeconds: number;
  open(s: { operator: string; keyHash: string; keyId: string; remoteAddr: string | null }): Promise<{ token: string; expiresAt: Date }>;
  /** True when a live session ended now. */
  end(token: string): Promise<boolean>;
  setCookie(reply: FastifyReply, token: string): void;
  clearCookie(reply: FastifyReply): void;
}

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function createSessions(pool: pg.Pool, o: SessionOptions = {}): Sessions {
  const absoluteSeconds = o.absoluteSeconds ?? 28_800;
  const idleSeconds = Math.min(o.idleSeconds ?? 900, absoluteSeconds);
  const attributes = `Path=/; HttpOnly; SameSite=Strict${o.secureCookie ? '; Secure' : ''}`;
  return {
    idleSeconds,
    absoluteSeconds,
    async verify(token) {
      if (!TOKEN.test(token)) return undefined;
      const row = await touchSession(pool, tokenHash(token), idleSeconds);
      return row && { keyHash: row.key_hash, keyId: row.key_id };
    },
    async open(s) {
      // 256 random bits: the token is the credential; guessing one is hopeless.
      const token = randomBytes(32).toString('base64url');
      const row = await insertSession(pool, { ...s, tokenHash: tokenHash(token), absoluteSeconds });
      // Rows expired for a day are dead weight: each new session sweeps a bounded batch.
      await deleteExpiredSessions(pool).catch(() => undefined);
      return { token, expiresAt: row.expires_at };
    },
    end: (token) => (TOKEN.test(token) ? endSession(pool, tokenHash(token)) : Promise.resolve(false)),
    setCookie(reply, token) {
      reply.header('Set-Cookie', `${SESSION_COOKIE}=${token}; ${attributes}; Max-Age=${absoluteSeconds}`);
    },
    clearCookie(reply) {
      reply.header('Set-Cookie', `${SESSION_COOKIE}=; ${attributes}; Max-Age=0`);
    },
  };
}

/** The session token of the request's `Cookie` header, if it carries one. */
export function sessionToken(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // "null" (an opaque origin: a sandboxed frame, a file) is never this API
  }
}

/** Why an unsafe request through a session looks cross-site (a 403 problem), or undefined. */
export function csrfRefusal(req: FastifyRequest): Problem | undefined {
  if (SAFE.has(req.method)) return undefined;
  const refuse = (why: string) =>
    problem(
      403,
      'cross-site-request',
      'Cross-site request refused',
      `${why}; a change through a console session must come from the console`,
    );
  // The host only: behind a TLS-terminating proxy the page is https:// while this process sees
  // http. A proxy must pass the Host header on (nginx: proxy_set_header Host $host).
  const origin = req.headers.origin;
  if (typeof origin === 'string' && originHost(origin) !== req.host) return refuse(`Origin ${origin.slice(0, 100)} is not this API`);
  if (req.headers['sec-fetch-site'] === 'cross-site') return refuse('the browser marked the request cross-site');
  if (req.headers[CSRF_HEADER] !== '1') return refuse(`the ${CSRF_HEADER} header is missing`);
  return undefined;
}
