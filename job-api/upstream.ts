/**
 * Upstreams: the external services a job type's effects call, each declared once and shared by
 * the steps that call it (`defineUpstream`, or `httpUpstream` for a plain HTTP API). A step
 * makes its call with any client inside `ctx.effect(step, call, { upstream })`; the effect
 * ledger around it (claim, IDs stored first, reconcile before a re-send, fencing, the slot, the
 * one retry layer, an attempt row per attempt) is the same for every upstream.
 */
import type { Credential } from '../lib/credentials.js';
import { NonRetryableError, RetryableError } from '../lib/errors.js';

/**
 * What the upstream does with an effect that is in doubt (an earlier attempt may have reached
 * it unseen):
 * - `idempotentByKey`: a re-send with the same key is answered with the first response, never
 *   applied twice (Stripe's `Idempotency-Key`): the next attempt sends it again.
 * - `lookupByKey`: `lookup(effectKey)` asks whether it happened; found, its IDs are recorded and
 *   nothing is sent; not found, it is sent.
 * - `none`: neither. An in-doubt effect is never re-sent blind: it stops as `effect_in_doubt`
 *   for an operator.
 */
export type UpstreamSemantics = 'idempotentByKey' | 'lookupByKey' | 'none';

/** What a call receives. */
export interface EffectCallContext {
  /** The effect's key: send it as the upstream's idempotency key. The same on every attempt and replay. */
  effectKey: string;
  /** Aborts at the call's timeout (the budget's `upstreamTimeoutMs`) or when the activity is cancelled. Pass it to the client. */
  signal: AbortSignal;
  /** The job's attempt number for this step (1, 2, ...). */
  attempt: number;
  /** The call's timeout in ms (the budget's `upstreamTimeoutMs`), for clients that take a number. */
  timeoutMs: number;
}

/** What a call (or a lookup) returns: the response, stored as JSON and returned again on reuse, and the provider's IDs. */
export interface EffectAnswer<R = unknown> {
  response: R;
  /** The provider's ID of the object it made (a PaymentIntent, a message). */
  providerId?: string | null;
  /** The provider's ID of the request that made it: on a reconcile, the original request's. */
  providerRequestId?: string | null;
  /** The HTTP status, when there was one: recorded on the attempt's row. */
  status?: number;
}

/**
 * One effect's call, made with any client: once per attempt, with the client's own retries
 * off (Temporal is the only retry layer). It returns the answer or throws; what it throws goes
 * through the upstream's `classify` (a `RetryableError` or `NonRetryableError` it throws is kept).
 */
export type EffectCall<R = unknown> = (c: EffectCallContext) => Promise<EffectAnswer<R>>;

/** The retry class of a client's error: `RetryableError` (with `retryAfterMs`) or `NonRetryableError` (with the provider's code). */
export type UpstreamError = RetryableError | NonRetryableError;

export interface UpstreamOptions {
  /** Shown in attempts, dead letters and the timeline. Lower-case letters, digits and dashes. */
  name: string;
  semantics: UpstreamSemantics;
  /**
   * Maps what the client threw onto the retry classes. Retryable: 429, 5xx, timeouts, resets,
   * with `retryAfterMs` when the error carries `Retry-After` (`parseRetryAfter`). Non-retryable:
   * the request can never succeed (declined, invalid, forbidden), with `providerCode` (e.g.
   * `card_declined`). A retryable error whose `statusCode` is below 500 (a 429) says the upstream
   * did not apply it; without one the effect stays in doubt and the next attempt reconciles.
   */
  classify(error: unknown): UpstreamError;
  /**
   * `lookupByKey` only: asks the upstream whether the effect with this key happened. Its
   * answer, or undefined when it did not. Throw a `RetryableError` (`request_in_progress`)
   * while the upstream is still applying it: undefined makes the next step send it.
   */
  lookup?(effectKey: string, c: { signal: AbortSignal; timeoutMs: number }): Promise<EffectAnswer | undefined>;
  /** The credentials its client uses: read when the worker starts (`jobType(..., { upstreams })`). Default none. */
  credentials?: readonly Credential[];
}

export interface Upstream {
  readonly name: string;
  readonly semantics: UpstreamSemantics;
  readonly credentials: readonly Credential[];
  classify(error: unknown): UpstreamError;
  readonly lookup: UpstreamOptions['lookup'] | undefined;
}

const NAME = /^[a-z][a-z0-9-]{0,62}$/;

export function defineUpstream(o: UpstreamOptions): Upstream {
  if (!NAME.test(o.name))
    throw new Error(`upstream name "${o.name}" must be lower-case letters, digits and dashes, starting with a letter`);
  if (!['idempotentByKey', 'lookupByKey', 'none'].includes(o.semantics))
    throw new Error(`upstream ${o.name}: semantics must be 'idempotentByKey', 'lookupByKey' or 'none'`);
  if (o.semantics === 'lookupByKey' && !o.lookup) throw new Error(`upstream ${o.name}: semantics 'lookupByKey' needs lookup(effectKey)`);
  if (o.semantics !== 'lookupByKey' && o.lookup) throw new Error(`upstream ${o.name}: lookup is asked only with semantics 'lookupByKey'`);
  return {
    name: o.name,
    semantics: o.semantics,
    credentials: [...(o.credentials ?? [])],
    classify: o.classify,
    lookup: o.lookup,
  };
}

/** The classes an `EffectCall` may throw as they are (already classified). */
export function isClassified(err: unknown): err is UpstreamError {
  return err instanceof RetryableError || err instanceof NonRetryableError;
}
