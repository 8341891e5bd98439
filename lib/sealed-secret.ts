/**
 * Secrets the product must be able to use again (a tenant's webhook signing secret), kept
 * sealed at rest: AES-256-GCM under a key derived (HKDF-SHA256) from the server secret
 * (`DURABLE_JOBS_SECRET`, lib/secret.ts) for one purpose, so a database dump alone does not
 * reveal them. Sealed with the newest server secret; opened with any listed one, so a rotation
 * of the server secret keeps the sealed values readable while the old one is still listed.
 * Layout: version byte (1), 12-byte IV, ciphertext, 16-byte tag; the purpose is the AAD.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { currentServerSecret, type ServerSecret } from './secret.js';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyFor(secretKey: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), `durable-jobs sealed ${purpose}`, 32));
}

export function sealSecret(value: string, purpose: string, secret: ServerSecret = currentServerSecret()): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret.keys[0]!, purpose), iv);
  cipher.setAAD(Buffer.from(purpose, 'utf8'));
  const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, body, cipher.getAuthTag()]);
}

/** The sealed value; throws (naming no value) when no listed server secret opens it. */
export function openSecret(sealed: Buffer, purpose: string, secret: ServerSecret = currentServerSecret()): string {
  if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error(`sealed ${purpose}: not a sealed value`);
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const body = sealed.subarray(1 + IV_BYTES, sealed.length - TAG_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  for (const k of secret.keys) {
    try {
      const d = createDecipheriv('aes-256-gcm', keyFor(k, purpose), iv);
      d.setAAD(Buffer.from(purpose, 'utf8'));
      d.setAuthTag(tag);
      return Buffer.concat([d.update(body), d.final()]).toString('utf8');
    } catch {
      // Sealed under another listed secret: try the next.
    }
  }
  throw new Error(
    `sealed ${purpose}: no listed server secret opens it (was ${'DURABLE_JOBS_SECRET'} rotated without keeping the old one?)`,
  );
}
