import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { MAX_JSON_DEPTH } from '../lib/json-safety.js';
import { zodFieldIssues } from '../lib/validation.js';
import {
  DurableJobsError,
  IdempotencyConflictError,
  NotFoundError,
  PermissionError,
  RateLimitedError,
  StateConflictError,
  UnavailableError,
  ValidationError,
  type Dependency,
  type FieldIssue,
} from '../lib/errors.js';

/** RFC 9457 problem details. `type` is stable: clients branch on it, never on `title` or `detail`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: FieldIssue[];
  retryAfterSeconds?: number;
  [k: string]: unknown;
}

export const problemType = (slug: string) => `urn:durable-jobs:problem:${slug}`;

const unavailable = new WeakMap<FastifyRequest, Dependency>();

/** Records which dependency made a request fail with 503 (the app's error handler calls it). */
export function noteUnavailable(req: FastifyRequest, err: unknown): void {
  if (err instanceof UnavailableError) unavailable.set(req, err.dependency);
}

/** The dependency that made this request answer 503, if one did. */
export function unavailableDependency(req: FastifyRequest): Dependency | undefined {
  return unavailable.get(req);
}

export function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  if (p.retryAfterSeconds !== undefined) reply.header('Retry-After', String(p.retryAfterSeconds));
  return reply.code(p.status).type('application/problem+json').send(p);
}

export function problem(status: number, slug: string, title: string, detail?: string, extra: Partial<Problem> = {}): Problem {
  return { type: problemType(slug), title, status, ...(detail ? { detail } : {}), ...extra };
}

/** Validates with zod or throws a 400 naming each offending field (`what`: "replay request", "query"). */
export function parseOr400<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw new ValidationError(`invalid ${what}`, zodFieldIssues(r.error));
}

/** Maps the coded error hierarchy onto problems; anything unknown is a 500 without internals. */
export function problemFromError(err: unknown): Problem {
  if (err instanceof ValidationError) return problem(400, 'validation-error', 'Invalid request', err.message, { errors: err.fields });
  if (err instanceof IdempotencyConflictError)
    return problem(422, 'idempotency-key-reused', 'Idempotency-Key reused with a different request', err.message);
  if (err instanceof NotFoundError) return problem(404, 'not-found', 'Not found', err.message);
  if (err instanceof PermissionError) return problem(403, err.problem.slug, err.problem.title, err.message);
  if (err instanceof StateConflictError) {
    const p = err.problem;
    return problem(p.status ?? 409, p.slug ?? 'state-conflict', p.title ?? 'Conflict with the current state', err.message, p.extra ?? {});
  }
  if (err instanceof RateLimitedError)
    return problem(429, 'rate-limited', 'Too many submits', err.message, { retryAfterSeconds: err.retryAfterSeconds });
  if (err instanceof UnavailableError)
    return problem(503, 'unavailable', 'Temporarily unavailable', `${err.message}; nothing was changed: retry the same request later`, {
      retryAfterSeconds: err.retryAfterSeconds,
    });
  if (err instanceof DurableJobsError) return problem(500, err.code, 'Internal error');
  const fe = err as { code?: string; statusCode?: number; message?: string };
  switch (fe?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem(413, 'payload-too-large', 'Request body too large', 'the body must be at most 256 KiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem(415, 'unsupported-media-type', 'Unsupported media type', 'send Content-Type: application/json');
    case 'DJ_JSON_TOO_DEEP':
      return problem(400, 'malformed-json', 'Malformed JSON', `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problem(400, 'malformed-json', 'Malformed JSON', 'the body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return problem(400, 'malformed-json', 'Malformed JSON', 'the body is not valid JSON');
  }
  if (fe instanceof SyntaxError || fe?.statusCode === 400)
    return problem(400, 'malformed-json', 'Malformed JSON', 'the body is not valid JSON');
  return problem(500, 'internal', 'Internal error');
}
