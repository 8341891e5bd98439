import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError, errorReply, headerValue, parseJsonObject, readBody, type Reply } from './http.js';
import { requestHash, type StoredResponse } from './idempotency.js';
import { genericOperation, type Operation } from './operations.js';
import type { SimState } from './state.js';
import type { TimerSet } from './timers.js';

export interface UpstreamDeps {
  state: SimState;
  operations: Map<string, Operation>;
  /** Timers holding answers for delay faults: cancelled only by close. */
  holds: TimerSet;
  /** Any other `POST /v1/<name>` is a generic effect (`genericOperation`): the testing kit's upstream for a team's own paths. */
  generic?: boolean;
}

/** Stripe caps keys at 255 characters; so does the product's own API. */
const MAX_KEY_LENGTH = 255;

function faultReply(status: number, retryAfter: string | undefined): Reply {
  const reply = errorReply(status, 'injected_fault', { status });
  if (retryAfter !== undefined) reply.headers = { 'Retry-After': retryAfter };
  return reply;
}

function replay(stored: StoredResponse, path: string, hash: string): Reply {
  if (stored.path !== path || stored.hash !== hash) return errorReply(422, 'idempotency_key_reused');
  const originalRequestId = String(stored.body.requestId ?? '');
  return {
    status: stored.status,
    body: stored.body,
    headers: { 'Idempotent-Replayed': 'true', 'Original-Request-Id': originalRequestId },
  };
}

async function readJson(req: IncomingMessage): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; reply: Reply }> {
  try {
    return parseJsonObject(await readBody(req));
  } catch (err) {
    if (err instanceof BodyTooLargeError) return { ok: false, reply: errorReply(413, 'body_too_large') };
    throw err;
  }
}

/**
 * The idempotent part of a POST. The key is claimed before the body is read, so a
 * second request with the same key arriving meanwhile gets 409 rather than a second
 * effect. Only a completed 2xx is stored: a validation error can be fixed and retried.
 */
async function processPost(
  req: IncomingMessage,
  path: string,
  op: Operation,
  requestId: string,
  deps: UpstreamDeps,
  processingMs = 0,
): Promise<Reply | undefined> {
  const key = headerValue(req, 'idempotency-key');
  if (!key) return errorReply(400, 'missing_idempotency_key');
  if (key.length > MAX_KEY_LENGTH) return errorReply(400, 'invalid_idempotency_key', { message: `at most ${MAX_KEY_LENGTH} characters` });
  const store = deps.state.idempotency;
  const stored = store.get(key);
  const release = stored ? undefined : store.claim(key, path);
  // Retry-After as real upstreams send it: the first request is still running, ask again soon.
  if (!stored && !release) return { ...errorReply(409, 'request_in_progress'), headers: { 'Retry-After': '1' } };
  try {
    const parsed = await readJson(req);
    if (!parsed.ok) return parsed.reply;
    const hash = requestHash(path, parsed.value);
    if (stored) return replay(stored, path, hash);
    if (processingMs > 0 && !(await deps.holds.sleep(processingMs, path))) return undefined;
    const invalid = op.validate(parsed.value);
    if (invalid) return errorReply(400, invalid.error, { message: invalid.message });
    const body = { ...op.apply(parsed.value), requestId };
    deps.state.effects.recordApplied(key, path);
    store.store(key, { path, hash, status: op.status, body });
    return { status: op.status, body };
  } finally {
    release?.();
  }
}

/**
 * A POST under /v1. Error faults are checked first because they model failures in
 * front of the provider (gateway, rate limiter) that never reach its idempotency layer.
 * A 200 delay fault lets the work happen and then holds the answer, which is how a
 * client ends up not knowing that its effect was applied.
 */
export async function handlePost(
  req: IncomingMessage,
  path: string,
  op: Operation,
  requestId: string,
  deps: UpstreamDeps,
): Promise<Reply | undefined> {
  const key = headerValue(req, 'idempotency-key');
  if (key) deps.state.effects.recordRequest(key, path);
  const fault = deps.state.faults.take(path);
  if (fault && fault.status !== 200) {
    req.resume();
    if (fault.delayMs > 0 && !(await deps.holds.sleep(fault.delayMs, path))) return undefined;
    return faultReply(fault.status, fault.retryAfter);
  }
  const slowProcessing = fault?.hold === 'processing' ? fault.delayMs : 0;
  const reply = await processPost(req, path, op, requestId, deps, slowProcessing);
  req.resume();
  if (reply === undefined) return undefined;
  if (fault && !slowProcessing && fault.delayMs > 0 && !(await deps.holds.sleep(fault.delayMs, path))) return undefined;
  return reply;
}

const GENERIC_PATH = /^\/v1\/[a-z][a-z0-9-]{0,62}$/;

/** Routes /v1 requests. `undefined` means the simulator is closing: answer nothing. */
export async function handleUpstream(
  req: IncomingMessage,
  method: string,
  path: string,
  requestId: string,
  deps: UpstreamDeps,
): Promise<Reply | undefined> {
  const op = deps.operations.get(path) ?? (deps.generic && GENERIC_PATH.test(path) ? genericOperation(path) : undefined);
  if (op) {
    if (method !== 'POST') return errorReply(405, 'method_not_allowed', { allow: 'POST' });
    return handlePost(req, path, op, requestId, deps);
  }
  const transcription = /^\/v1\/transcriptions\/([^/]+)$/.exec(path);
  if (transcription && method === 'GET') {
    const found = deps.state.transcriptions.get(safeDecode(transcription[1]));
    if (!found) return errorReply(404, 'not_found');
    const body: Record<string, unknown> = { id: found.id, status: found.status };
    if (found.text !== undefined) body.text = found.text;
    return { status: 200, body };
  }
  const idem = /^\/v1\/idempotency\/([^/]+)$/.exec(path);
  if (idem && method === 'GET') return lookupKey(safeDecode(idem[1]), deps.state);
  return errorReply(404, 'not_found');
}

/** A malformed escape cannot name anything stored, so it simply finds nothing. */
function safeDecode(segment: string | undefined): string {
  try {
    return decodeURIComponent(segment ?? '');
  } catch {
    return '';
  }
}

/** Lets the product reconcile "did my request land?" after losing the answer. */
function lookupKey(key: string, state: SimState): Reply {
  const stored = state.idempotency.get(key);
  if (stored) {
    return { status: 200, body: { key, path: stored.path, state: 'completed', status: stored.status, response: stored.body } };
  }
  const claimedPath = state.idempotency.claimedPath(key);
  if (claimedPath !== undefined) return { status: 200, body: { key, path: claimedPath, state: 'in_progress' } };
  return errorReply(404, 'not_found');
}
