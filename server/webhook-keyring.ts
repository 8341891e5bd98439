import { Webhook } from 'standardwebhooks';
import type { Logger } from '../lib/logger.js';
import type { WebhookSecrets } from '../lib/webhook-secrets.js';

/**
 * The webhook secrets the API verifies with, replaceable while it serves. A request takes
 * its source's verifiers once, when it starts, and verifies with those: a replacement swaps
 * one reference, so a request in flight finishes with the set it started with and none is
 * dropped or half-verified.
 */
export interface WebhookKeyring {
  /** The verifiers of `source`, one per secret (any one may match); undefined: unknown source. */
  verifiers(source: string): readonly Webhook[] | undefined;
  replace(secrets: WebhookSecrets): void;
}

function build(secrets: WebhookSecrets): ReadonlyMap<string, readonly Webhook[]> {
  return new Map(Object.entries(secrets).map(([source, list]) => [source, list.map((s) => new Webhook(s))]));
}

export function createWebhookKeyring(secrets: WebhookSecrets): WebhookKeyring {
  let current = build(secrets);
  return {
    verifiers: (source) => current.get(source),
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
