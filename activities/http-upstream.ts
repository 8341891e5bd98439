/**
 * `httpUpstream`: a ready upstream for plain HTTP APIs. One `fetch` per call (no retries of its
 * own: Temporal is the only retry layer), the effect key in the idempotency header, the
 * budget's timeout, and every outcome classified: 408/425/429/5xx retryable (with
 * `Retry-After`), a 409 to a keyed request retryable (the key is still in progress), other 4xx
 * non-retryable with the provider's own error code read from the body when it has one.
 */
import type { Credential } from '../lib/credentials.js';
import { NonRetryableError, RetryableError } from '../lib/errors.js';
import { classifyStatus, errorClassForStatus, parseRetryAfter } from '../lib/retry.js';
import { annotateSpan, traceHeaders, withSpan } from '../lib/tracing.js';
import { defineUpstream, type EffectAnswer, type EffectCall, type Upstream, type UpstreamSemantics } from '../job-api/upstream.js';

/** An HTTP answer as the adapter read it. */
export interface HttpAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

export interface HttpUpstreamOptions {
  name: string;
  /**
   * Where `request(path)` goes: `baseUrl + path`. A function is asked on every call, so the URL
   * may come from configuration read after the module loaded (a test's upstream on a free port).
   */
  baseUrl: string | (() => string);
  /** Default `idempotentByKey`; `lookupByKey` needs `lookup`. */
  semantics?: UpstreamSemantics;
  /** Sent on every request; a `Credential`'s value is read at worker start and never logged. Default none. */
  headers?: Record<string, string | Credential | { credential: Credential; prefix: string }>;
  /** The header that carries the effect key. Default `Idempotency-Key`; null sends none. */
  idempotencyHeader?: string | null;
  /** The provider's IDs from a 2xx answer. Default: `body.id` and the `x-request-id` header. */
  providerIds?(answer: HttpAnswer): { providerId?: string | null; providerRequestId?: string | null };
  /** The header with the provider's request ID on failures (named in the error message). Default `x-request-id`. */
  requestIdHeader?: string;
  /** `lookupByKey`: asks the API whether the effect happened, with this upstream's `get`. */
  lookup?(effectKey: string, api: HttpUpstream, c: { signal: AbortSignal; timeoutMs: number }): Promise<EffectAnswer | undefined>;
}

export interface HttpUpstream extends Upstream {
  /** The step's call: `ctx.effect(step, api.request('/v1/messages', body), { upstream: api })`. */
  request(path: string, body?: unknown, opts?: { method?: string; headers?: Record<string, string> }): EffectCall<Record<string, unknown>>;
  /** One request, classified on failure; with `effectKey` it carries the idempotency header. */
  exchange(r: {
    method?: string;
    path: string;
    body?: unknown;
    effectKey?: string;
    headers?: Record<string, string>;
    timeoutMs: number;
    signal?: AbortSignal;
  }): Promise<HttpAnswer>;
}

/** The provider's own error code in an error body: Stripe's `{ error: { code } }` (else its `type`), `{ error: "code" }`, `{ code }`. */
export function providerCodeOf(body: Record<string, unknown>): string | undefined {
  const e = body.error;
  const code =
    e && typeof e === 'object'
      ? ((e as Record<string, unknown>).code ?? (e as Record<string, unknown>).type)
      : typeof e === 'string'
        ? e
        : body.code;
  return typeof code === 'string' && /^[A-Za-z0-9_.:-]{1,80}$/.test(code) ? code : undefined;
}

/**
 * A non-2xx answer's retry class (pure: unit-tested). The message names the status, the path
 * and the provider's request ID ("(request req_...)": the dead letter lists it), never a header
 * we sent.
 */
export function httpFailure(
  a: { status: number; body: Record<string, unknown>; headers: Headers },
  c: { path: string; keySent: boolean; requestIdHeader?: string; nowMs?: number },
): RetryableError | NonRetryableError {
  const requestId = a.headers.get(c.requestIdHeader ?? 'x-request-id');
  const message = `upstream answered ${a.status} on ${c.path}${requestId ? ` (request ${requestId})` : ''}`;
  const sent = { idempotencyKeySent: c.keySent };
  const providerCode = providerCodeOf(a.body);
  const code = providerCode ? { providerCode } : {};
  if (classifyStatus(a.status, sent) === 'retryable') {
    return new RetryableError(message, {
      statusCode: a.status,
      errorClass: errorClassForStatus(a.status, sent),
      retryAfterMs: parseRetryAfter(a.headers.get('retry-after'), c.nowMs ?? Date.now()),
      ...code,
    });
  }
  return new NonRetryableError(message, { statusCode: a.status, errorClass: errorClassForStatus(a.status), ...code });
}

/** Any other error of `fetch`: the request may or may not have arrived (in doubt). */
function transportFailure(err: unknown, timedOut: boolean, timeoutMs: number): RetryableError {
  return new RetryableError(
    timedOut ? `upstream call timed out after ${timeoutMs} ms` : `upstream unreachable: ${(err as Error)?.message ?? String(err)}`,
    { errorClass: timedOut ? 'timeout' : 'connection_error' },
    { cause: err },
  );
}

/**
 * One `fetch` inside a client span when tracing is on (lib/tracing.ts), its `traceparent` sent
 * so that the upstream's own spans join the job's trace; a plain `fetch` when it is off.
 */
function tracedFetch(upstream: string, url: string, path: string, init: RequestInit & { method: string; headers: Record<string, string> }) {
  const attributes = { 'http.request.method': init.method, 'url.path': path.split('?')[0]!.slice(0, 200), upstream };
  return withSpan(`${init.method} ${upstream}`, attributes, async () => {
    const res = await fetch(url, { ...init, headers: { ...init.headers, ...traceHeaders() } });
    annotateSpan({ 'http.response.status_code': res.status });
    return res;
  });
}

export function httpUpstream(o: HttpUpstreamOptions): HttpUpstream {
  const idempotencyHeader = o.idempotencyHeader === undefined ? 'Idempotency-Key' : o.idempotencyHeader;
  const credentials = Object.values(o.headers ?? {}).flatMap((v) => (typeof v === 'string' ? [] : ['credential' in v ? v.credential : v]));
  const fixedHeaders = (): Record<string, string> =>
    Object.fromEntries(
      Object.entries(o.headers ?? {}).map(([k, v]) => [
        k,
        typeof v === 'string' ? v : 'credential' in v ? `${v.prefix}${v.credential.value()}` : v.value(),
      ]),
    );
  const providerIds =
    o.providerIds ??
    ((a: HttpAnswer) => ({
      providerId: typeof a.body.id === 'string' ? a.body.id : null,
      providerRequestId: a.headers.get('x-request-id'),
    }));

  const exchange: HttpUpstream['exchange'] = async (r) => {
    const timeout = AbortSignal.timeout(r.timeoutMs);
    const signal = r.signal ? AbortSignal.any([timeout, r.signal]) : timeout;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...fixedHeaders(), ...r.headers };
    if (r.effectKey && idempotencyHeader) headers[idempotencyHeader] = r.effectKey;
    const method = r.method ?? 'POST';
    let res: Response;
    try {
      res = await tracedFetch(o.name, (typeof o.baseUrl === 'function' ? o.baseUrl() : o.baseUrl) + r.path, r.path, {
        method,
        headers,
        body: r.body === undefined ? undefined : JSON.stringify(r.body),
        signal,
      });
    } catch (err) {
      throw transportFailure(err, timeout.aborted, r.timeoutMs);
    }
    const text = await res.text().catch(() => '');
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = text ? JSON.parse(text) : {};
      body = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { value: parsed };
    } catch {
      body = { raw: text.slice(0, 200) };
    }
    const answer = { status: res.status, body, headers: res.headers };
    if (!res.ok)
      throw httpFailure(answer, {
        path: r.path,
        keySent: r.effectKey !== undefined && idempotencyHeader !== null,
        requestIdHeader: o.requestIdHeader,
      });
    return answer;
  };

  const base = defineUpstream({
    name: o.name,
    semantics: o.semantics ?? 'idempotentByKey',
    credentials,
    // `exchange` throws classified errors (kept as they are); anything else is a transport failure.
    classify: (err) => transportFailure(err, false, 0),
    ...(o.lookup ? { lookup: (key: string, c: { signal: AbortSignal; timeoutMs: number }) => o.lookup!(key, api, c) } : {}),
  });
  const api: HttpUpstream = {
    ...base,
    exchange,
    request:
      (path, body, opts = {}) =>
      async (c) => {
        const a = await exchange({
          method: opts.method,
          path,
          body,
          headers: opts.headers,
          effectKey: c.effectKey,
          timeoutMs: c.timeoutMs,
          signal: c.signal,
        });
        return { response: a.body, status: a.status, ...providerIds(a) };
      },
  };
  return api;
}
