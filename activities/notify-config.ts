/**
 * The notification targets' settings, read once when the worker's activities are made (so a
 * wrong one stops the worker at start, naming the variable). docs/configuration.md lists them.
 */
import { credential, readCredentials, type Credential } from '../lib/credentials.js';
import { ConfigError } from '../lib/errors.js';

export interface NotifyConfig {
  /** E-mail over SMTP; undefined: e-mail goes to the worker's provider (`PROVIDER_URL`, the simulator). */
  smtp?: { url: Credential; from: string; domain: string };
  completionWebhook: {
    /** Loopback, private and link-local destinations are refused unless this is set (dev mode allows them). */
    allowPrivate: boolean;
    /** Concurrent deliveries per tenant and in total (`COMPLETION_WEBHOOK_CONCURRENCY=perTenant,total`). Default 4,16. */
    perTenant: number;
    global: number;
  };
}

/** `SMTP_URL` (or `SMTP_URL_FILE`): a credential (it may carry a password), never printed. */
export const SMTP_URL = credential('SMTP_URL');

const positive = (raw: string, name: string): number => {
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < 1) throw new ConfigError(`${name} must be "perTenant,total" of positive integers, e.g. 4,16`);
  return n;
};

/** The domain of `SMTP_FROM` (`a@b.example` or `Name <a@b.example>`): the Message-ID's right-hand side. */
export function fromDomain(from: string): string | undefined {
  return /@([A-Za-z0-9.-]+\.[A-Za-z0-9-]+|localhost)>?\s*$/.exec(from)?.[1]?.toLowerCase();
}

/**
 * `sendsEmail`: whether a job type this worker runs declares `notify.email`. Without one, the
 * SMTP settings are not this library's to check: a team's own upstream may read `SMTP_URL`
 * for its own mail (the example's welcome e-mail does) without a notification sender.
 */
export function notifyConfigFrom(env: NodeJS.ProcessEnv, sendsEmail = true): NotifyConfig {
  const [perTenant, global] = (env.COMPLETION_WEBHOOK_CONCURRENCY ?? '4,16').split(',');
  const completionWebhook = {
    allowPrivate: env.COMPLETION_WEBHOOK_ALLOW_PRIVATE === 'true' || env.DURABLE_JOBS_MODE === 'dev',
    perTenant: positive(perTenant ?? '', 'COMPLETION_WEBHOOK_CONCURRENCY'),
    global: positive(global ?? perTenant ?? '', 'COMPLETION_WEBHOOK_CONCURRENCY'),
  };
  if (!sendsEmail || (!env[SMTP_URL.env] && !env[SMTP_URL.file])) return { completionWebhook };
  readCredentials([SMTP_URL], env);
  const from = env.SMTP_FROM ?? '';
  const domain = fromDomain(from);
  if (!domain) throw new ConfigError('SMTP_FROM must be the sender address when SMTP_URL is set (e.g. jobs@acme.example)');
  return { smtp: { url: SMTP_URL, from, domain }, completionWebhook };
}
