import { createHash, createHmac, randomBytes } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { currentServerSecret, type ServerSecret } from './secret.js';

/**
 * One derivation: a hex digest of NUL-separated parts (so that ("ab","c") and ("a","bc") never
 * hash alike). Keyed: HMAC-SHA256 with a server secret (`lib/secret.ts`), so an ID or a stored
 * hash cannot be reversed or confirmed by guessing its material without the secret (security
 * review F5: a job ID yielded its idempotency key by dictionary in under a second). Unkeyed:
 * plain SHA-256, what every ID and hash was before, still accepted by lookups.
 */
type Digest = (...parts: string[]) => string;

const unkeyedDigest: Digest = (...parts) => createHash('sha256').update(parts.join('\u0000')).digest('hex');
const keyedDigests = new WeakMap<ServerSecret, Digest[]>();

/** The derivations lookups accept, newest first: each listed secret (the first derives), then unkeyed. */
function digests(): Digest[] {
  const secret = currentServerSecret();
  let d = keyedDigests.get(secret);
  if (!d) {
    d = [
      ...secret.keys.map(
        (key): Digest =>
          (...parts) =>
            createHmac('sha256', key).update(parts.join('\u0000')).digest('hex'),
      ),
      unkeyedDigest,
    ];
    keyedDigests.set(secret, d);
  }
  return d;
}
const current = (): Digest => digests()[0]!;

const deriveJobId = (d: Digest, tenantId: string, jobType: string, idempotencyKey: string) =>
  `job-${d('intent', tenantId, jobType, idempotencyKey).slice(0, 32)}`;
const deriveKeyHash = (d: Digest, tenantId: string, idempotencyKey: string) => d('key', tenantId, idempotencyKey);
function deriveInputHash(d: Digest, jobType: string, input: unknown, terms?: Record<string, unknown>): string {
  const set = Object.fromEntries(Object.entries(terms ?? {}).filter(([, v]) => v !== undefined));
  if (Object.keys(set).length === 0) return d('input', jobType, canonicalJson(input));
  return d('input', jobType, canonicalJson(input), canonicalJson(set));
}
const deriveApiKeyHash = (d: Digest, apiKey: string) => d('api-key', apiKey);

/**
 * `jobId = workflowId = "job-" + hex(HMAC(secret; tenant, type, key))`, truncated to 128 bits.
 * Retries of one business intent land on one workflow; the raw key never appears in IDs,
 * logs or the Web UI, and without the secret a job ID does not yield it by guessing.
 */
export function jobIdFor(tenantId: string, jobType: string, idempotencyKey: string): string {
  return deriveJobId(current(), tenantId, jobType, idempotencyKey);
}

/** What we store instead of the raw idempotency key (unique per tenant). */
export function keyHash(tenantId: string, idempotencyKey: string): string {
  return deriveKeyHash(current(), tenantId, idempotencyKey);
}

/**
 * Hash of the intent's content: the same key with another input is a conflict (422). `terms`
 * are the submit's other terms as the client sent them (`runAt`, `delaySeconds`, `tags`): part
 * of the hash only when one is set, so every job submitted without them keeps the hash it has
 * (and a retry of theirs stays a replay). Canonical JSON escapes control characters, so the
 * NUL separator cannot occur inside a part. Keyed: a dead letter's `inputHash` cannot confirm
 * a guessed input.
 */
export function inputHash(jobType: string, input: unknown, terms?: Record<string, unknown>): string {
  return deriveInputHash(current(), jobType, input, terms);
}

/** API keys are stored hashed (keyed); a database leak does not leak working keys, nor test guesses offline. */
export function apiKeyHash(apiKey: string): string {
  return deriveApiKeyHash(current(), apiKey);
}

/** An intent's identifiers under one derivation. */
export interface IntentIds {
  jobId: string;
  keyHash: string;
  inputHash: string;
}

/**
 * The intent's identifiers under every derivation lookups accept, newest first: `[0]` is what a
 * new intent gets (the first secret); the rest are what an intent accepted before a rotation,
 * or before keyed hashing (unkeyed, last), was stored with. A duplicate submit finds its job
 * under any of them and keeps that job's ID.
 */
export function intentIdCandidates(
  tenantId: string,
  jobType: string,
  idempotencyKey: string,
  input: unknown,
  terms?: Record<string, unknown>,
): IntentIds[] {
  return digests().map((d) => ({
    jobId: deriveJobId(d, tenantId, jobType, idempotencyKey),
    keyHash: deriveKeyHash(d, tenantId, idempotencyKey),
    inputHash: deriveInputHash(d, jobType, input, terms),
  }));
}

/** Whether `stored` is the input hash of this input under any accepted derivation (a dead letter recorded before a rotation). */
export function inputHashMatches(stored: string, jobType: string, input: unknown, terms?: Record<string, unknown>): boolean {
  return digests().some((d) => deriveInputHash(d, jobType, input, terms) === stored);
}

/**
 * The stored hashes an API key may have, newest first: `[0]` is the one it gets (and is
 * rewritten to on first use); the rest are older secrets' and the unkeyed SHA-256 of before.
 */
export function apiKeyHashCandidates(apiKey: string): string[] {
  return digests().map((d) => deriveApiKeyHash(d, apiKey));
}

/** A short, stable ID of a key for audit rows and `whoami` (12 hex digits, keyed): never the key, no offline test of it. */
export function keyIdFor(key: string): string {
  return current()('key-id', key).slice(0, 12);
}

/**
 * The unkeyed derivations: what every ID and hash was before keyed hashing. Scheduled windows
 * keep them: a window's key is public material (its type and time), so a secret would hide
 * nothing, and an unkeyed ID stays the same across a deploy or a rotation of the secret, which
 * keeps one job per window. Tests use them to make jobs the way the previous release did.
 */
export const unkeyed = {
  jobIdFor: (tenantId: string, jobType: string, idempotencyKey: string) => deriveJobId(unkeyedDigest, tenantId, jobType, idempotencyKey),
  keyHash: (tenantId: string, idempotencyKey: string) => deriveKeyHash(unkeyedDigest, tenantId, idempotencyKey),
  inputHash: (jobType: string, input: unknown, terms?: Record<string, unknown>) => deriveInputHash(unkeyedDigest, jobType, input, terms),
  apiKeyHash: (apiKey: string) => deriveApiKeyHash(unkeyedDigest, apiKey),
} as const;

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
