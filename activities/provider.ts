import { NonRetryableError, RetryableError } from '../lib/errors.js';
import { classifyStatus, errorClassForStatus, parseRetryAfter } from '../lib/retry.js';

export interface ProviderResponse {
  status: number;
  body: Record<string, unknown>;
  requestId: string | null;
}

export interface ProviderCall {
  method?: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** Sent as `Idempotency-Key`: the effect key, the same on every attempt. */
  effectKey?: string;
  tenantId: string;
  timeoutMs: number;
  /** Aborts the call when the activity is cancelled. */
  signal?: AbortSignal;
}

/**
 * The upstream adapter. It makes exactly one HTTP request per call: no retries of its own
 * (Temporal is the only retry layer), a timeout shorter than the activity's, and every
 * outcome translated into a classified error.
 */
export function createProvider(baseUrl: string) {
  return async function call(c: ProviderCall): Promise<ProviderResponse> {
    const timeout = AbortSignal.timeout(c.timeoutMs);
    const signal = c.signal ? AbortSignal.any([timeout, c.signal]) : timeout;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-tenant-id': c.tenantId };
    if (c.effectKey) headers['idempotency-key'] = c.effectKey;
    let res: Response;
    try {
      res = await fetch(baseUrl + c.path, {
        method: c.method ?? 'POST',
        headers,
        body: c.body === undefined ? undefined : JSON.stringify(c.body),
        signal,
      });
    } catch (err) {
      const timedOut = timeout.aborted;
      throw new RetryableError(
        timedOut ? `upstream call timed out after ${c.timeoutMs} ms` : `upstream unreachable: ${(err as Error).message}`,
        { errorClass: timedOut ? 'timeout' : 'connection_error' },
        { cause: err },
      );
    }
    const requestId = res.headers.get('x-request-id');
    const text = await res.text().catch(() => '');
    let body: Record<string, unknown> = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      body = { raw: text.slice(0, 200) };
    }
    if (res.ok) return { status: res.status, body, requestId };
    const message = `upstream answered ${res.status} on ${c.path}${requestId ? ` (request ${requestId})` : ''}`;
    const sent = { idempotencyKeySent: c.effectKey !== undefined };
    if (classifyStatus(res.status, sent) === 'retryable') {
      throw new RetryableError(message, {
        statusCode: res.status,
        errorClass: errorClassForStatus(res.status, sent),
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), Date.now()),
      });
    }
    throw new NonRetryableError(message, { statusCode: res.status, errorClass: errorClassForStatus(res.status) });
  };
}

export type Provider = ReturnType<typeof createProvider>;
