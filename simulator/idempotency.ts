import { createHash } from 'node:crypto';
import type { JsonObject } from './http.js';

/** Key order and whitespace must not make the "same" request look different. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as JsonObject)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The hash is scoped by path so a key reused on another endpoint counts as a conflict. */
export function requestHash(path: string, body: unknown): string {
  return createHash('sha256').update(path).update('\n').update(canonicalJson(body)).digest('hex');
}

/** Logs must never carry the key in clear; a short digest still lets lines be correlated. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

export interface StoredResponse {
  path: string;
  hash: string;
  status: number;
  body: JsonObject;
}

/**
 * Like Stripe: only a completed 2xx is stored. While the first request for a key is
 * being processed the key is "claimed", and concurrent requests get 409 instead of
 * racing to apply the effect twice.
 */
export class IdempotencyStore {
  private readonly stored = new Map<string, StoredResponse>();
  private readonly claims = new Map<string, { path: string; token: symbol }>();

  get(key: string): StoredResponse | undefined {
    return this.stored.get(key);
  }

  claimedPath(key: string): string | undefined {
    return this.claims.get(key)?.path;
  }

  /** Returns a release function, or undefined when another request holds the key. */
  claim(key: string, path: string): (() => void) | undefined {
    if (this.claims.has(key)) return undefined;
    const token = Symbol(key);
    this.claims.set(key, { path, token });
    // The token stops a request that outlived a reset from releasing a newer claim.
    return () => {
      if (this.claims.get(key)?.token === token) this.claims.delete(key);
    };
  }

  store(key: string, response: StoredResponse): void {
    this.stored.set(key, response);
  }

  clear(): void {
    this.stored.clear();
    this.claims.clear();
  }
}
