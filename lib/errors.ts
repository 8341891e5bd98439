/**
 * One small, coded error hierarchy. The class name is the Temporal failure `type`
 * (activities convert them in `activities/attempt.ts` `failAttempt`), so workflows branch on it and the
 * Web UI shows it.
 */
export abstract class DurableJobsError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * What an upstream adapter adds to a failure (activities/upstreams.ts): which upstream it was,
 * and the provider's own error code (Stripe's `card_declined`), shown in the attempt's row,
 * the dead letter and the timeline. Never a credential: codes are short identifiers.
 */
export interface UpstreamErrorDetails {
  /** The upstream's declared name; the effect path fills it in. */
  upstream?: string;
  /** The provider's own error code, when its answer carried one. */
  providerCode?: string;
}

/** Transient: 429, 5xx, timeouts, connection errors. `retryAfterMs` comes from `Retry-After`. */
export class RetryableError extends DurableJobsError {
  readonly code = 'retryable';
  constructor(
    message: string,
    readonly details: { statusCode?: number; retryAfterMs?: number; errorClass: string } & UpstreamErrorDetails,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Permanent: 400/401/403/404/409/422, validation, compliance. Never retried. */
export class NonRetryableError extends DurableJobsError {
  readonly code = 'non_retryable';
  constructor(
    message: string,
    readonly details: { statusCode?: number; errorClass: string } & UpstreamErrorDetails,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * No concurrency slot is free and the workflow waits for one (`SlotWaitArgs`): the attempt ends
 * without a call and without spending a retry attempt (activities/job-steps.ts).
 */
export class SlotUnavailableError extends DurableJobsError {
  readonly code = 'slot_unavailable';
}

/**
 * The degradation gate did not admit the job at its first step (`StepArgs.admitInStep`): the
 * attempt wrote nothing and made no call; the workflow runs the gate (activities/job-steps.ts).
 */
export class NotAdmittedError extends DurableJobsError {
  readonly code = 'not_admitted';
}

export interface FieldIssue {
  path: string;
  message: string;
}

/** Bad request input; `fields` names each offending field. */
export class ValidationError extends DurableJobsError {
  readonly code = 'validation';
  constructor(
    message: string,
    readonly fields: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** The idempotency key was already used for a different intent (other input or type). */
export class IdempotencyConflictError extends DurableJobsError {
  readonly code = 'idempotency_conflict';
}

/** Which dependency could not take the work: metrics count 503s by it, never by message text. */
export type Dependency = 'postgres' | 'temporal' | 'contention';

/** Temporal or Postgres could not take the work now; nothing was accepted. */
export class UnavailableError extends DurableJobsError {
  readonly code = 'unavailable';
  readonly dependency: Dependency;
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options: { dependency: Dependency; cause?: unknown },
  ) {
    super(message, options);
    this.dependency = options.dependency;
  }
}

/**
 * The tenant submitted faster than its intake rate limit (issue 38 §5): nothing was accepted.
 * Retry the same request after `retryAfterSeconds` (HTTP 429 with `Retry-After`).
 */
export class RateLimitedError extends DurableJobsError {
  readonly code = 'rate_limited';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class NotFoundError extends DurableJobsError {
  readonly code = 'not_found';
}

/**
 * The resource is in a state that does not allow the request (cancelling a finished job,
 * replaying a discarded dead letter). `slug` and `title` name the problem type clients
 * branch on (default `state-conflict`); `status` is 409 unless the request can never apply (422).
 */
export class StateConflictError extends DurableJobsError {
  readonly code = 'state_conflict';
  constructor(
    message: string,
    readonly problem: { slug?: string; title?: string; status?: 409 | 422; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
  }
}

/**
 * The caller is known but not entitled to this request (a tenant asking for a priority its
 * settings do not allow). `slug` and `title` name the problem type; the HTTP answer is 403.
 */
export class PermissionError extends DurableJobsError {
  readonly code = 'permission';
  constructor(
    message: string,
    readonly problem: { slug: string; title: string },
  ) {
    super(message);
  }
}

export class ConfigError extends DurableJobsError {
  readonly code = 'config';
}
