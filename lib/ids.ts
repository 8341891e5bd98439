import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/** NUL-separated so that ("ab","c") and ("a","bc") never hash alike. */
function sha256Hex(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}

/**
 * `jobId = workflowId = "job-" + hex(sha256(tenant, type, key))`, truncated to 128 bits.
 * Retries of one business intent land on one workflow; the raw key never appears in IDs,
 * logs or the Web UI.
 */
export function jobIdFor(tenantId: string, jobType: string, idempotencyKey: string): string {
  return `job-${sha256Hex('intent', tenantId, jobType, idempotencyKey).slice(0, 32)}`;
}

/** What we store instead of the raw idempotency key (unique per tenant). */
export function keyHash(tenantId: string, idempotencyKey: string): string {
  return sha256Hex('key', tenantId, idempotencyKey);
}

/**
 * Hash of the intent's content: the same key with another input is a conflict (422). `terms`
 * are the submit's other terms as the client sent them (`runAt`, `delaySeconds`, `tags`): part
 * of the hash only when one is set, so every job submitted without them keeps the hash it has
 * (and a retry of theirs stays a replay). Canonical JSON escapes control characters, so the
 * NUL separator cannot occur inside a part.
 */
export function inputHash(jobType: string, input: unknown, terms?: Record<string, unknown>): string {
  const set = Object.fromEntries(Object.entries(terms ?? {}).filter(([, v]) => v !== undefined));
  if (Object.keys(set).length === 0) return sha256Hex('input', jobType, canonicalJson(input));
  return sha256Hex('input', jobType, canonicalJson(input), canonicalJson(set));
}

/** API keys are stored hashed; a database leak does not leak working keys. */
export function apiKeyHash(apiKey: string): string {
  return sha256Hex('api-key', apiKey);
}

/** Generated tenant keys start so: a key found in a log or a repository is recognisably ours. */
export const API_KEY_PREFIX = 'dj_';

/** A new tenant API key: `dj_` + 192 random bits (base64url, 32 characters). */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(24).toString('base64url');
}

/**
 * What support may see of a key: `dj_` and the next 8 characters (48 of its 192 bits), for
 * generated keys only; a key chosen by hand may be short, and its start may be most of it.
 */
export function apiKeyPrefix(apiKey: string): string | null {
  return /^dj_[A-Za-z0-9_-]{32}$/.test(apiKey) ? apiKey.slice(0, API_KEY_PREFIX.length + 8) : null;
}

/**
 * A stable effect key per (job, step): never derived from the attempt, so every retry,
 * redelivery or replay of the same step presents the same key to the upstream.
 */
export function effectKeyFor(jobId: string, step: string): string {
  return `${jobId}:${step}`;
}

/** Idempotency keys: 8-255 visible ASCII characters (the HTTP contract: `Idempotency-Key` of `POST /v1/jobs`). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{8,255}$/;
