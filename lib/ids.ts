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

/**
 * Generated keys carry a visible scheme so a key found in a log, a ticket or a repository is
 * recognisably ours and of which kind (secret scanners match on it): `dj_live_` for tenant keys,
 * `dj_op_` for operator (admin) keys. Keys generated before this scheme (`dj_` + 32) keep working.
 */
export const API_KEY_PREFIX = 'dj_live_';
export const OPERATOR_KEY_PREFIX = 'dj_op_';
const LEGACY_API_KEY_PREFIX = 'dj_';

/**
 * Keys a person configures (`SEED_TENANTS`, `ADMIN_API_KEY`, `ADMIN_API_KEYS`, a key carried over
 * with `addKey`) are refused below this length: 32 characters of even a small alphabet are well
 * past what an online guesser (throttled to a few dozen tries a minute) or an offline one against a
 * leaked hash could cover, where the former minimums (8 and 16) were not.
 */
export const MIN_CONFIGURED_KEY_LENGTH = 32;

/** 192 random bits, base64url: 32 characters (at least 128 bits, as issue 39 asks, with room). */
const randomPart = () => randomBytes(24).toString('base64url');

/** A new tenant API key: `dj_live_` + 192 random bits (base64url, 32 characters). */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomPart();
}

/** A new operator key for `ADMIN_API_KEYS`: `dj_op_` + 192 random bits (base64url, 32 characters). */
export function generateOperatorKey(): string {
  return OPERATOR_KEY_PREFIX + randomPart();
}

const GENERATED = [API_KEY_PREFIX, OPERATOR_KEY_PREFIX, LEGACY_API_KEY_PREFIX].map(
  (scheme) => [scheme, new RegExp(`^${scheme}[A-Za-z0-9_-]{32}$`)] as const,
);

/**
 * What support may see of a key: its scheme and the next 8 characters (48 of its 192 bits; 144
 * stay secret), for generated keys only; a key chosen by hand may be short, and its start may be
 * most of it. `dj_live_AbCdEfGh`, `dj_op_AbCdEfGh`, or `dj_AbCdEfGh` for a key of the old scheme.
 */
export function apiKeyPrefix(apiKey: string): string | null {
  for (const [scheme, pattern] of GENERATED) if (pattern.test(apiKey)) return apiKey.slice(0, scheme.length + 8);
  return null;
}

/**
 * The part of a presented key that failed-authentication throttling counts under
 * (server/auth-throttle.ts): its scheme and 8 more characters when it starts with one of ours,
 * else its first 8. A guesser trying `dj_live_…` keys then fills buckets of its own prefixes,
 * never one shared by every real tenant key (8 characters would be `dj_live_` alone).
 */
export function keyThrottlePrefix(key: string): string {
  const scheme = GENERATED.find(([s]) => key.startsWith(s) && s !== LEGACY_API_KEY_PREFIX)?.[0] ?? '';
  return key.slice(0, scheme.length + 8);
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
