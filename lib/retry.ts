/**
 * Retry classification and delays: pure functions, so they are unit-tested over many draws.
 * Temporal is the only retry layer; activities translate an upstream outcome into a
 * RetryableError (with the delay chosen here) or a NonRetryableError.
 */

/** Floor for `Retry-After: 0`: retrying in the same millisecond only hammers the upstream. */
export const MIN_RETRY_DELAY_MS = 250;
/** Ceiling on any server-requested delay: a buggy `Retry-After: 86400` must not park a job for a day. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

export type OutcomeClass = 'retryable' | 'non_retryable';

/** What besides the status decides the class: whether the request carried an `Idempotency-Key`. */
export interface StatusContext {
  idempotencyKeySent?: boolean;
}

/**
 * 429, 408 and 5xx retry; other 4xx are permanent (validation, auth, compliance, conflict).
 * One exception: a 409 to a request that carried an `Idempotency-Key` means "a request with
 * this key is still in progress" (IETF Idempotency-Key draft; Stripe's `idempotency_key_in_use`):
 * typically our own earlier attempt, which the upstream is still applying. It must be retried
 * with the same key, never dead-lettered: the first request may well succeed.
 */
export function classifyStatus(status: number, c: StatusContext = {}): OutcomeClass {
  if (status === 408 || status === 425 || status === 429 || status >= 500) return 'retryable';
  if (status === 409 && c.idempotencyKeySent) return 'retryable';
  return 'non_retryable';
}

/** A 409 "key in progress": the effect may be applied by the request still running, so it stays in doubt. */
export function isKeyInProgress(status: number, c: StatusContext = {}): boolean {
  return status === 409 && c.idempotencyKeySent === true;
}

/** Stable class names shown in attempts, job status and dead letters. */
export function errorClassForStatus(status: number, c: StatusContext = {}): string {
  if (isKeyInProgress(status, c)) return 'request_in_progress';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'upstream_unavailable';
  if (status === 401 || status === 403) return 'permission_denied';
  if (status === 400 || status === 422) return 'invalid_request';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 408) return 'timeout';
  return `http_${status}`;
}

/**
 * `Retry-After` as delta-seconds or HTTP-date, in ms, clamped to [MIN, MAX].
 * A date in the past means "now" (the floor); garbage means "no advice" (undefined, so
 * the caller falls back to jitter).
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(v)) {
    ms = Number(v) * 1000;
  } else if (/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v)) {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  } else {
    return undefined;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_DELAY_MS, ms));
}

export interface JitterOptions {
  baseMs: number;
  capMs: number;
}

/**
 * The narrowest window a jittered delay is drawn from (unless the cap is smaller). Jobs that
 * fail together (an upstream outage) must not retry together, and the Temporal server fires
 * retry timers with about a second's granularity: the first retries' textbook windows
 * (`base * 2` = 1 s) all land in the same second. 60 jobs of a 503 storm put 44 retries
 * into one second that way; drawn over 5 s they are spread over five or more.
 */
export const MIN_JITTER_WINDOW_MS = 5_000;

/** The window of attempt `attempt`'s draw: `min(cap, max(MIN_JITTER_WINDOW_MS, base * 2^attempt))`. */
export function jitterWindowMs(attempt: number, opts: JitterOptions): number {
  const exp = opts.baseMs * 2 ** Math.max(0, attempt);
  return Math.min(opts.capMs, Math.max(MIN_JITTER_WINDOW_MS, exp));
}

/**
 * Full jitter (AWS), with `attempt` starting at 1 for the first retry: uniform over
 * `[MIN_RETRY_DELAY_MS, jitterWindowMs(attempt))`. The floor is the start of the range, not a
 * clamp: clamping `random(0, w)` put every draw below the floor (a quarter of first retries)
 * on exactly the same delay. `random` is injectable for tests.
 */
export function fullJitterMs(attempt: number, opts: JitterOptions, random: () => number = Math.random): number {
  const window = jitterWindowMs(attempt, opts);
  return MIN_RETRY_DELAY_MS + Math.floor(random() * Math.max(0, window - MIN_RETRY_DELAY_MS));
}

export interface DelayDecision {
  delayMs: number;
  source: 'retry-after' | 'jitter';
}

export function chooseDelay(attempt: number, retryAfterMs: number | undefined, opts: JitterOptions, random?: () => number): DelayDecision {
  if (retryAfterMs !== undefined) return { delayMs: retryAfterMs, source: 'retry-after' };
  return { delayMs: fullJitterMs(attempt, opts, random), source: 'jitter' };
}

/**
 * Room kept before the elapsed deadline for the next attempt itself: the server's retry
 * timer can fire about a second late, and the attempt needs time to run. Without it the
 * next attempt starts just before the cap and is cut off by the timeout mid-flight.
 */
export function attemptMarginMs(lastAttemptMs: number): number {
  return Math.max(1_500, 2 * lastAttemptMs);
}

/**
 * True when sleeping `delayMs` and running one more attempt (`marginMs`) would pass the
 * elapsed budget: the attempt should stop now and say why, instead of sleeping into the
 * scheduleToClose cap and timing out blind.
 */
export function exceedsBudget(nowMs: number, delayMs: number, deadlineMs: number | undefined, marginMs = 0): boolean {
  return deadlineMs !== undefined && nowMs + delayMs + marginMs >= deadlineMs;
}
