import { randomBytes } from 'node:crypto';
import type { DrillStack } from './stack.js';
import { DRILL_ADMIN_KEY, DRILL_TENANT } from './stack.js';

export const uid = () => randomBytes(5).toString('hex');

export class DrillCheckFailed extends Error {}

/** A failed expectation ends the item with FAIL and this message as what was observed. */
export function check(cond: unknown, observed: string): asserts cond {
  if (!cond) throw new DrillCheckFailed(observed);
}

export async function waitUntil<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new DrillCheckFailed(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
}

export async function http(
  s: DrillStack,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; admin?: boolean } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { authorization: `Bearer ${init.admin ? DRILL_ADMIN_KEY : DRILL_TENANT.key}`, ...init.headers };
  if (init.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(s.api + path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body };
}

export function submit(
  s: DrillStack,
  type: string,
  input: unknown,
  key = `drill-${uid()}`,
  extra: Record<string, unknown> = {},
): Promise<HttpResult> {
  return http(s, '/v1/jobs', { body: { type, input, ...extra }, headers: { 'idempotency-key': key } });
}

export async function jobStatus(s: DrillStack, jobId: string): Promise<any> {
  return (await http(s, `/v1/jobs/${jobId}`)).body;
}

export async function waitForStatus(s: DrillStack, jobId: string, status: string | string[], timeoutMs = 120_000): Promise<any> {
  const want = Array.isArray(status) ? status : [status];
  let last: any;
  try {
    return await waitUntil(
      `job ${jobId} to be ${want.join(' or ')}`,
      async () => {
        last = await jobStatus(s, jobId);
        return want.includes(last?.status) ? last : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    // Say where it stopped: the difference between "slow" and "stuck" is in these fields.
    const seen = last
      ? ` (last seen: ${last.status}, attempts ${last.attempts}${last.statusReason ? `, ${last.statusReason}` : ''}${last.error ? `, ${last.error.errorClass}: ${String(last.error.message).slice(0, 120)}` : ''})`
      : '';
    throw new DrillCheckFailed(`${(err as Error).message}${seen}`);
  }
}

export async function simEffects(s: DrillStack): Promise<any> {
  return (await fetch(`${s.providerUrl}/__sim/effects`)).json();
}

export async function simFault(s: DrillStack, body: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${s.providerUrl}/__sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  check(r.status < 300, `the simulator refused a fault: ${r.status}`);
}

/** Ends the held delays (fault `delayMs`) of calls to `path`, or all, now; returns how many. */
export async function simRelease(s: DrillStack, path?: string): Promise<number> {
  const r = await fetch(`${s.providerUrl}/__sim/holds/release`, { method: 'POST', body: path ? JSON.stringify({ path }) : '' });
  return ((await r.json()) as { released: number }).released;
}

/** Clears the simulator's faults and records, and ends every call an earlier item left held (its worker killed, say). */
export async function simReset(s: DrillStack): Promise<void> {
  await simRelease(s);
  await fetch(`${s.providerUrl}/__sim/reset`, { method: 'POST' });
}

export interface ItemResult {
  done: string;
  observed: string;
}
export interface DrillItem {
  /** Number and name, as the table prints it: `'1 one intent, one job'`. */
  item: string;
  /** One line for `--help`: what the item does to the stack and what it must observe. */
  about: string;
  needs?: 'simulator' | 'own-temporal-and-postgres' | 'own-temporal-server';
  run(s: DrillStack): Promise<ItemResult>;
}
