import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.js';

/**
 * source → `whsec_` secrets; the first signs, every one verifies (rotation). A key is a source
 * name, or `source@tenant` for a source bound to a tenant (F3): its events start and touch
 * only that tenant's jobs. A source without a tenant (the single-tenant dev setup, a provider
 * shared by every tenant) reaches the jobs its routes find, of any tenant.
 */
export type WebhookSecrets = Record<string, string[]>;

const SOURCE_KEY = /^([a-z0-9_-]{1,64})(?:@([a-z0-9][a-z0-9_-]{0,62}))?$/;

/** The source name and the tenant a `WebhookSecrets` key binds it to (null: none). */
export function sourceBinding(key: string): { source: string; tenantId: string | null } {
  const m = SOURCE_KEY.exec(key);
  if (!m)
    throw new ConfigError(`webhook source "${key.slice(0, 80)}" must be "source" or "source@tenant" (lower-case letters, digits, _ and -)`);
  return { source: m[1]!, tenantId: m[2] ?? null };
}

/**
 * `source[@tenant]=whsec_...[|whsec_...],...`. Errors name the variable and the allowed shape,
 * never the value: it holds secrets.
 */
export function parseWebhookSecrets(raw: string, what = 'WEBHOOK_SECRETS'): WebhookSecrets {
  const out: WebhookSecrets = {};
  const seen = new Set<string>();
  if (raw.trim() === '') return out;
  for (const entry of raw.split(',')) {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const secrets = entry
      .slice(eq + 1)
      .split('|')
      .map((s) => s.trim());
    if (eq <= 0 || !SOURCE_KEY.test(key) || secrets.some((s) => !/^whsec_[A-Za-z0-9+/=]{16,}$/.test(s))) {
      throw new ConfigError(`${what} must be "source[@tenant]=whsec_...[|whsec_...],..." (base64 after whsec_, at least 16 characters)`);
    }
    const { source } = sourceBinding(key);
    if (seen.has(source)) throw new ConfigError(`${what}: source "${source}" is listed twice (one entry per source, its tenant included)`);
    seen.add(source);
    out[key] = secrets;
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

/** The secrets in effect: `WEBHOOK_SECRETS`, and per source the file's entry (secrets and tenant) over them. */
export function webhookSecretsFrom(env: string, file: string | undefined): WebhookSecrets {
  const fromEnv = parseWebhookSecrets(env);
  const fromFile = file ? readWebhookSecretsFile(file) : {};
  const overridden = new Set(Object.keys(fromFile).map((k) => sourceBinding(k).source));
  const kept = Object.entries(fromEnv).filter(([k]) => !overridden.has(sourceBinding(k).source));
  return { ...Object.fromEntries(kept), ...fromFile };
}
