/**
 * The two pluggable parts of an effect (activities/effects.ts keeps the rest): making the
 * request, and classifying what went wrong. An `EffectAdapter` is either a declared upstream
 * with the step's own call (`ctx.effect(step, call, { upstream })`), or the worker's
 * `PROVIDER_URL` in the simulator's dialect (`ctx.effect(step, path, body)`, the outbox).
 */
import { scrubCredentials } from '../lib/credentials.js';
import { NonRetryableError, RetryableError } from '../lib/errors.js';
import { inputHash } from '../lib/ids.js';
import { isClassified, type EffectCall, type EffectCallContext, type Upstream, type UpstreamError } from '../job-api/upstream.js';
import type { Provider } from './provider.js';

/**
 * What the effect sends, and to whom: a declared upstream with the step's own call
 * (`ctx.effect(step, call, { upstream })`), or the worker's provider in the simulator's
 * dialect (`ctx.effect(step, path, body)`, the outbox) under the job type's `upstream`
 * declaration. Only the request and its classification differ; the ledger is the same.
 */
export type EffectRequest =
  | {
      path: string;
      body: Record<string, unknown>;
      /** The job type's upstream declaration (JobTypeInfo.upstream). Default: idempotent by key, no lookup. */
      upstream?: { idempotentByKey: boolean; lookupByKey: boolean } | undefined;
    }
  | { call: EffectCall; through: Upstream };

export interface EffectResult<R = Record<string, unknown>> {
  effectKey: string;
  providerId: string | null;
  providerRequestId: string | null;
  /** The upstream's response, as stored (JSON): the same on a fresh call, a reuse and a reconcile. */
  response: R;
  /** How this attempt got the result: a fresh call, a stored result, or a reconciling call. */
  via: 'executed' | 'reused' | 'reconciled';
}

/** The request and its classification: a declared upstream's call, or the chosen provider in the simulator's dialect. */
export function adapterFor(r: EffectRequest, provider: Provider | undefined, c: { step: string; tenantId: string }): EffectAdapter {
  if ('call' in r) return upstreamAdapter(r.through, r.call);
  if (!provider)
    throw new NonRetryableError(`effect ${c.step}: ctx.effect(step, path, body) needs the worker's provider (PROVIDER_URL)`, {
      errorClass: 'configuration',
    });
  return providerAdapter(provider, {
    step: c.step,
    path: r.path,
    body: r.body,
    tenantId: c.tenantId,
    upstream: r.upstream ?? { idempotentByKey: true, lookupByKey: false },
  });
}

/** Evidence of what was (or will be) sent: the body for a provider request; a call's is opaque, so its upstream's name. */
export function requestHashOf(r: EffectRequest, step: string): string {
  return 'call' in r ? inputHash(step, { upstream: r.through.name }) : inputHash(step, r.body);
}

/** An answer as the ledger stores it. */
export interface Answer {
  status: number | undefined;
  response: unknown;
  providerId: string | null;
  providerRequestId: string | null;
}

export interface EffectAdapter {
  /** The upstream's name: on the failed attempt's row and the dead letter. */
  name: string;
  /** What an in-doubt effect gets: looked up, re-sent with the same key, or stopped for an operator. */
  inDoubt: 'lookup' | 'resend' | 'stop';
  /** One call; throws a classified error (its `upstream` filled in). */
  call(c: EffectCallContext): Promise<Answer>;
  /** `inDoubt === 'lookup'`: the effect's answer if the upstream has it, else undefined. */
  lookup(effectKey: string, c: { signal: AbortSignal; timeoutMs: number }): Promise<Answer | undefined>;
}

/** A declared upstream with the step's call. */
export function upstreamAdapter(upstream: Upstream, call: EffectCall): EffectAdapter {
  return {
    name: upstream.name,
    inDoubt: upstream.semantics === 'lookupByKey' ? 'lookup' : upstream.semantics === 'idempotentByKey' ? 'resend' : 'stop',
    call: async (c) => answerOf(await bounded(upstream, c.signal, c.timeoutMs, (signal) => call({ ...c, signal }))),
    lookup: async (effectKey, c) => {
      const found = await bounded(upstream, c.signal, c.timeoutMs, (signal) => upstream.lookup!(effectKey, { ...c, signal }));
      return found ? answerOf(found) : undefined;
    },
  };
}

/**
 * `fn` under the call's timeout and the activity's cancellation, its failure classified. A
 * client that ignores the signal is not waited for past the timeout: the attempt goes on, the
 * effect stays in doubt (a timeout says nothing of whether the upstream applied it).
 */
async function bounded<T>(upstream: Upstream, cancel: AbortSignal, timeoutMs: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([timeout, cancel]);
  try {
    const work = fn(signal);
    work.catch(() => undefined); // a late rejection after the abort is no unhandled one
    return await Promise.race([work, aborted(signal)]);
  } catch (err) {
    if (timeout.aborted && !isClassified(err))
      throw stamp(
        new RetryableError(`upstream call timed out after ${timeoutMs} ms`, { errorClass: 'timeout' }, { cause: err }),
        upstream.name,
      );
    throw stamp(classify(upstream, err), upstream.name);
  }
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** The upstream's verdict on a client error; a classifier that throws or answers nothing leaves the effect in doubt (retryable). */
export function classify(upstream: Pick<Upstream, 'name' | 'classify'>, err: unknown): UpstreamError {
  if (isClassified(err)) return err;
  let verdict: unknown;
  try {
    verdict = upstream.classify(err);
  } catch (bad) {
    return new RetryableError(
      `upstream ${upstream.name}: classify threw (${(bad as Error)?.message})`,
      { errorClass: 'unclassified' },
      { cause: err },
    );
  }
  if (isClassified(verdict)) return verdict;
  return new RetryableError(
    `upstream ${upstream.name}: ${(err as Error)?.message ?? String(err)}`,
    { errorClass: 'unclassified' },
    { cause: err },
  );
}

/** Names the upstream on the failure, and takes every credential value out of its message. */
export function stamp<E extends UpstreamError>(err: E, name: string): E {
  err.details.upstream ??= name;
  err.message = scrubCredentials(err.message);
  return err;
}

function answerOf(a: { response: unknown; providerId?: string | null; providerRequestId?: string | null; status?: number }): Answer {
  return {
    status: a.status,
    // Stored as JSON and returned as it was stored on reuse: the same value either way.
    response: a.response === undefined ? null : JSON.parse(JSON.stringify(a.response)),
    providerId: a.providerId ?? null,
    providerRequestId: a.providerRequestId ?? null,
  };
}

/**
 * The worker's provider (`PROVIDER_URL`, or the fallback an operator chose) in the simulator's
 * dialect: POST JSON to `path`, the object ID from `body.id`, the request ID from
 * `x-request-id`, a lookup by `GET /v1/idempotency/{key}` when the job type declares one.
 */
export function providerAdapter(
  provider: Provider,
  r: {
    step: string;
    path: string;
    body: Record<string, unknown>;
    tenantId: string;
    upstream: { idempotentByKey: boolean; lookupByKey: boolean };
  },
): EffectAdapter {
  const name = provider.upstreamName;
  return {
    name,
    inDoubt: r.upstream.lookupByKey ? 'lookup' : r.upstream.idempotentByKey ? 'resend' : 'stop',
    call: async (c) => {
      try {
        const res = await provider({
          path: r.path,
          body: r.body,
          effectKey: c.effectKey,
          tenantId: r.tenantId,
          timeoutMs: c.timeoutMs,
          signal: c.signal,
        });
        return { status: res.status, response: res.body, providerId: idOf(res.body), providerRequestId: res.requestId };
      } catch (err) {
        throw isClassified(err) ? stamp(err, name) : err;
      }
    },
    lookup: async (effectKey, c) => {
      let found;
      try {
        found = await provider({ method: 'GET', path: `/v1/idempotency/${encodeURIComponent(effectKey)}`, tenantId: r.tenantId, ...c });
      } catch (err) {
        if (err instanceof NonRetryableError && err.details.statusCode === 404) return undefined;
        throw isClassified(err) ? stamp(err, name) : err;
      }
      const b = found.body as { state?: string; path?: string; status?: number; response?: Record<string, unknown> };
      if (b.state === 'in_progress') {
        throw stamp(
          new RetryableError(`effect ${r.step} is still in progress upstream`, {
            errorClass: 'request_in_progress',
            statusCode: 409,
            retryAfterMs: 1_000,
          }),
          name,
        );
      }
      // A key stored for another path is not this effect: let the call get the upstream's own answer.
      if (b.state !== 'completed' || !b.response || b.path !== r.path) return undefined;
      const response = b.response;
      return {
        status: b.status ?? 200,
        response,
        providerId: idOf(response),
        // The original request's ID, as the upstream stored it with its answer.
        providerRequestId: typeof response.requestId === 'string' ? response.requestId : null,
      };
    },
  };
}

const idOf = (body: Record<string, unknown>): string | null => (typeof body.id === 'string' ? body.id : null);
