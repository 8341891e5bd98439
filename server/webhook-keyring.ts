import { Webhook } from 'standardwebhooks';
import type { Logger } from '../lib/logger.js';
import { sourceBinding, type WebhookSecrets } from '../lib/webhook-secrets.js';

/** A configured source: the verifiers of its secrets (any one may match) and the tenant it is bound to (null: none). */
export interface WebhookSource {
  verifiers: readonly Webhook[];
  tenantId: string | null;
}

/**
 * The webhook secrets the API verifies with, and the tenant each source is bound to,
 * replaceable while it serves. A request takes its source's entry once, when it starts, and
 * verifies and acts with that: a replacement swaps one reference, so a request in flight
 * finishes with the set it started with and none is dropped or half-verified.
 */
export interface WebhookKeyring {
  /** The source's verifiers and tenant; undefined: unknown source. */
  source(source: string): WebhookSource | undefined;
  /** The verifiers of `source`, one per secret (any one may match); undefined: unknown source. */
  verifiers(source: string): readonly Webhook[] | undefined;
  replace(secrets: WebhookSecrets): void;
}

function build(secrets: WebhookSecrets): ReadonlyMap<string, WebhookSource> {
  const out = new Map<string, WebhookSource>();
  for (const [key, list] of Object.entries(secrets)) {
    const { source, tenantId } = sourceBinding(key);
    if (out.has(source)) throw new Error(`webhook source "${source}" is configured twice`);
    out.set(source, { verifiers: list.map((s) => new Webhook(s)), tenantId });
  }
  return out;
}

export function createWebhookKeyring(secrets: WebhookSecrets): WebhookKeyring {
  let current = build(secrets);
  return {
    source: (source) => current.get(source),
    verifiers: (source) => current.get(source)?.verifiers,
    replace(next) {
      current = build(next); // built first: a secret the library refuses keeps the old set
    },
  };
}

/**
 * Re-reads the secrets on SIGHUP (`load`: `WEBHOOK_SECRETS` and `WEBHOOK_SECRETS_FILE`) and
 * swaps them in. A file that does not parse keeps the secrets in use and says why (never the
 * secrets). Returns the function that removes the handler.
 */
export function reloadWebhookSecretsOnSighup(keyring: WebhookKeyring, load: () => WebhookSecrets, log: Pick<Logger, 'info' | 'error'>) {
  const onHup = () => {
    try {
      const next = load();
      keyring.replace(next);
      const counts = Object.fromEntries(Object.entries(next).map(([source, list]) => [source, list.length]));
      log.info({ secretsPerSource: counts }, 'SIGHUP: webhook secrets reloaded');
    } catch (err) {
      log.error({ err: { message: (err as Error).message } }, 'SIGHUP: webhook secrets not reloaded; the previous ones stay in use');
    }
  };
  process.on('SIGHUP', onHup);
  return () => {
    process.off('SIGHUP', onHup);
  };
}
