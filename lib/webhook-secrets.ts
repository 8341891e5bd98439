import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.js';

/** source → `whsec_` secrets; the first signs, every one verifies (rotation). */
export type WebhookSecrets = Record<string, string[]>;

/**
 * `source=whsec_...[|whsec_...],...`. Errors name the variable and the allowed shape, never
 * the value: it holds secrets.
 */
export function parseWebhookSecrets(raw: string, what = 'WEBHOOK_SECRETS'): WebhookSecrets {
  const out: WebhookSecrets = {};
  if (raw.trim() === '') return out;
  for (const entry of raw.split(',')) {
    const eq = entry.indexOf('=');
    const source = entry.slice(0, eq).trim();
    const secrets = entry
      .slice(eq + 1)
      .split('|')
      .map((s) => s.trim());
    if (eq <= 0 || !/^[a-z0-9_-]+$/.test(source) || secrets.some((s) => !/^whsec_[A-Za-z0-9+/=]{16,}$/.test(s))) {
      throw new ConfigError(`${what} must be "source=whsec_...[|whsec_...],..." (base64 after whsec_, at least 16 characters)`);
    }
    out[source] = secrets;
  }
  return out;
}

/**
 * The `WEBHOOK_SECRETS_FILE`: the same entries as `WEBHOOK_SECRETS`, one per line or
 * separated by commas; blank lines and `#` comments are ignored. Read at start and again on
 * SIGHUP (a rotation without a restart).
 */
export function readWebhookSecretsFile(path: string): WebhookSecrets {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`WEBHOOK_SECRETS_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const entries = text
    .split(/\r?\n/)
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter((l) => l !== '')
    .join(',');
  return parseWebhookSecrets(entries, `WEBHOOK_SECRETS_FILE (${path})`);
}

/** The secrets in effect: `WEBHOOK_SECRETS`, and per source the file's entries over them. */
export function webhookSecretsFrom(env: string, file: string | undefined): WebhookSecrets {
  return { ...parseWebhookSecrets(env), ...(file ? readWebhookSecretsFile(file) : {}) };
}
