/**
 * Where a tenant's completion webhook may point (SSRF): http(s) only, and, unless the
 * deployment allows it (`COMPLETION_WEBHOOK_ALLOW_PRIVATE=true`, or dev mode), never an address
 * inside the deployment's own networks (loopback, private, link-local, CGNAT, unspecified), by
 * literal or by what the name resolves to. Checked at the admin route (the URL) and before every
 * delivery (activities/notify-destination.ts: the addresses, as a name may resolve elsewhere later).
 */
import { BlockList, isIP } from 'node:net';

const internal = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  internal.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  internal.addSubnet(net, bits, 'ipv6');

/** Whether `address` (an IP literal) is inside the deployment's own networks. IPv4-mapped IPv6 is checked as IPv4. */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return internal.check(mapped, 'ipv4');
  const family = isIP(address);
  return family === 0 ? true : internal.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A problem with the URL itself (pure), or undefined: the scheme, credentials in it, a fragment. */
export function webhookUrlProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http(s) URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must use http or https';
  if (url.username || url.password) return 'url must not carry credentials';
  if (raw.length > 2000) return 'url must be at most 2000 characters';
  return undefined;
}
