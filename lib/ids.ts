import { createHash } from 'node:crypto';
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

/** Hash of the intent's content: the same key with another input is a conflict (422). */
export function inputHash(jobType: string, input: unknown): string {
  return sha256Hex('input', jobType, canonicalJson(input));
}

/** API keys are stored hashed; a database leak does not leak working keys. */
export function apiKeyHash(apiKey: string): string {
  return sha256Hex('api-key', apiKey);
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
