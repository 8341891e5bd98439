// Third-party servers the example service's tests (and the notification tests) talk to, none
// written here: stripe-mock (Stripe's own API mock), mailpit (an SMTP server with an HTTP
// API) and Jaeger (the traces tests' OTLP sink and query API; scripts/lib/jaeger.ts). Each is built once from the Go module proxy into ~/.cache/durable-jobs/<name>/<version>/
// with progress printed (scripts/lib/go-binary.ts), like the Temporal CLI, then found there.
import { resolveGoBinary, type GoBinarySpec } from './go-binary.js';
import { JAEGER } from './jaeger.js';

export const STRIPE_MOCK: GoBinarySpec = {
  name: 'stripe-mock',
  label: 'stripe-mock',
  goPackage: 'github.com/stripe/stripe-mock',
  version: 'v0.203.0',
  cacheDir: 'stripe-mock',
  envVar: 'STRIPE_MOCK_PATH',
  buildHint: 'about a minute the first time',
  versionArgs: ['-version'],
};

export const MAILPIT: GoBinarySpec = {
  name: 'mailpit',
  label: 'mailpit',
  goPackage: 'github.com/axllent/mailpit',
  version: 'v1.33.1',
  cacheDir: 'mailpit',
  envVar: 'MAILPIT_PATH',
  buildHint: 'a few minutes the first time',
  versionArgs: ['version', '--no-release-check'],
};

export const THIRD_PARTY = { 'stripe-mock': STRIPE_MOCK, mailpit: MAILPIT, jaeger: JAEGER } as const;
export type ThirdPartyName = keyof typeof THIRD_PARTY;

/** The binary's path, building it the first time. */
export function resolveThirdParty(name: ThirdPartyName, log: (msg: string) => void = console.log): Promise<string> {
  const spec = THIRD_PARTY[name];
  return resolveGoBinary(spec, { explicitPath: process.env[spec.envVar], log });
}
