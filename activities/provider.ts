import { httpUpstream } from './http-upstream.js';

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

export interface Provider {
  (c: ProviderCall): Promise<ProviderResponse>;
  /** The upstream's name in attempts and dead letters. */
  readonly upstreamName: string;
}

/**
 * The worker's provider (`PROVIDER_URL`, the simulator's dialect): an `httpUpstream` declared
 * by the worker, not by a job type, that `ctx.effect(step, path, body)` and the outbox call.
 * One HTTP request per call (Temporal is the only retry layer), the tenant in `x-tenant-id`, a
 * timeout shorter than the activity's, every outcome classified (activities/http-upstream.ts).
 */
export function createProvider(baseUrl: string, name = 'provider'): Provider {
  const upstream = httpUpstream({ name, baseUrl });
  const call = async (c: ProviderCall): Promise<ProviderResponse> => {
    const a = await upstream.exchange({ ...c, headers: { 'x-tenant-id': c.tenantId } });
    return { status: a.status, body: a.body, requestId: a.headers.get('x-request-id') };
  };
  return Object.assign(call, { upstreamName: name });
}
