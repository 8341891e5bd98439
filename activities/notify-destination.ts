/** Before every completion-webhook delivery: where the URL points now (lib/webhook-url.ts). */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isInternalAddress, webhookUrlProblem } from '../lib/webhook-url.js';

/** Why a delivery to `raw` is refused now, or undefined: allowed. */
export async function refusedDestination(raw: string, allowPrivate: boolean): Promise<string | undefined> {
  const problem = webhookUrlProblem(raw);
  if (problem || allowPrivate) return problem;
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
  if (addresses.length === 0) return undefined; // unresolvable: the delivery fails as a connection error and retries
  return addresses.some(isInternalAddress) ? 'the completion webhook resolves to an internal address' : undefined;
}
