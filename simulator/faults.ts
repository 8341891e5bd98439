import type { JsonObject } from './http.js';

/** A queued answer for the next `remaining` POSTs to `path`. */
export interface ResponseFault {
  path: string;
  remaining: number;
  /** 4xx/5xx: answered instead of processing. 200: processed normally, answer held. */
  status: number;
  retryAfter?: string;
  delayMs: number;
  /**
   * For 200 rules: where the delay happens. `answer` (default): the effect is applied at once
   * and the answer held. `processing`: the request holds its Idempotency-Key claim for the
   * delay before applying, so a second request with the key meanwhile gets 409
   * `request_in_progress` (a slow upstream that is still working on the first request).
   */
  hold?: 'answer' | 'processing';
}

export type FaultRequest = { kind: 'response'; fault: ResponseFault } | { kind: 'dropWebhooks'; path: string; count: number };

type Parsed = { ok: true; value: FaultRequest } | { ok: false; message: string };

/** Long enough for any drill; short enough that a typo cannot hang a test run for hours. */
const MAX_DELAY_MS = 10 * 60_000;
const TRANSCRIPTIONS_PATH = '/v1/transcriptions';

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function parseRetryAfter(value: unknown): { ok: true; value?: string } | { ok: false; message: string } {
  if (value === undefined) return { ok: true };
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text === 'string' && (/^\d+$/.test(text) || !Number.isNaN(Date.parse(text)))) {
    return { ok: true, value: text };
  }
  return { ok: false, message: 'retryAfter must be delay seconds ("2") or an HTTP-date string' };
}

function parseStatus(body: JsonObject): { ok: true; value: number } | { ok: false; message: string } {
  // A rule with only delayMs means "slow but successful", the common drill for timeouts.
  const status = body.status ?? (body.delayMs !== undefined ? 200 : undefined);
  if (status === 200) {
    if (body.delayMs === undefined) return { ok: false, message: 'status 200 requires delayMs' };
    return { ok: true, value: 200 };
  }
  if (typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599) {
    return { ok: true, value: status };
  }
  return { ok: false, message: 'status must be 200 (with delayMs) or an integer 400..599' };
}

function parseResponseFault(body: JsonObject, path: string): Parsed {
  const times = body.times ?? 1;
  if (!isPositiveInt(times)) return { ok: false, message: 'times must be a positive integer' };
  const status = parseStatus(body);
  if (!status.ok) return status;
  const delayMs = body.delayMs ?? 0;
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
    return { ok: false, message: `delayMs must be a number between 0 and ${MAX_DELAY_MS}` };
  }
  const retryAfter = parseRetryAfter(body.retryAfter);
  if (!retryAfter.ok) return retryAfter;
  const fault: ResponseFault = { path, remaining: times, status: status.value, delayMs };
  if (retryAfter.value !== undefined) fault.retryAfter = retryAfter.value;
  if (body.hold !== undefined) {
    if (body.hold !== 'answer' && body.hold !== 'processing') return { ok: false, message: 'hold must be "answer" or "processing"' };
    if (status.value !== 200) return { ok: false, message: 'hold applies only to status 200 rules' };
    fault.hold = body.hold;
  }
  return { ok: true, value: { kind: 'response', fault } };
}

/** Validates a POST /__sim/faults body; the message says what is allowed. */
export function parseFaultRequest(body: JsonObject): Parsed {
  const path = body.path;
  if (typeof path !== 'string' || !path.startsWith('/v1/')) {
    return { ok: false, message: 'path must be a string starting with /v1/, e.g. "/v1/summaries"' };
  }
  if (body.dropWebhooks === undefined) return parseResponseFault(body, path);
  if (path !== TRANSCRIPTIONS_PATH) {
    return { ok: false, message: `dropWebhooks applies only to path ${TRANSCRIPTIONS_PATH}` };
  }
  if (!isPositiveInt(body.dropWebhooks)) {
    return { ok: false, message: 'dropWebhooks must be a positive integer' };
  }
  return { ok: true, value: { kind: 'dropWebhooks', path, count: body.dropWebhooks } };
}

/** Queued fault rules, consumed first-in first-out per path. */
export class FaultQueue {
  private readonly byPath = new Map<string, ResponseFault[]>();
  private webhooksToDrop = 0;

  add(request: FaultRequest): void {
    if (request.kind === 'dropWebhooks') {
      this.webhooksToDrop += request.count;
      return;
    }
    const queue = this.byPath.get(request.fault.path) ?? [];
    queue.push({ ...request.fault });
    this.byPath.set(request.fault.path, queue);
  }

  /** Consumes one use of the oldest rule for `path`, if any. */
  take(path: string): ResponseFault | undefined {
    const queue = this.byPath.get(path);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) queue.shift();
    if (queue.length === 0) this.byPath.delete(path);
    return head;
  }

  takeDroppedWebhook(): boolean {
    if (this.webhooksToDrop <= 0) return false;
    this.webhooksToDrop -= 1;
    return true;
  }

  pending(): { rules: ResponseFault[]; dropWebhooks: number } {
    return { rules: [...this.byPath.values()].flat().map((rule) => ({ ...rule })), dropWebhooks: this.webhooksToDrop };
  }

  clear(): void {
    this.byPath.clear();
    this.webhooksToDrop = 0;
  }
}
