/**
 * Failed authentications, throttled and made visible (issue 39 §1, F4). Without it one client
 * tried about 970 keys a second, unanswered, unlogged (only `request completed 401`) and
 * uncounted, and every tenant-key guess cost a Postgres query.
 *
 * Two buckets count a wrong key: its source address, and the key's first 8 characters, after
 * the scheme of a generated key (`dj_live_`: lib/ids.ts `keyThrottlePrefix`). A guesser spread
 * over many addresses still works on one prefix. Past `maxFailures` in a
 * window, every request of that address, or bearing a key with that prefix, is answered 429
 * with `Retry-After` before its key is looked at, so a correct guess cannot slip through and
 * a throttled guess costs no query. The price: the holder of a real key under an attacked
 * prefix (or behind an attacked address) waits out the window too.
 *
 * The counts live in this API process's memory (fixed windows): N processes allow N times the
 * guesses, and a restart forgets them. Enough to turn 970 guesses a second into a few dozen a
 * minute; a shared store (Postgres, Redis) would make it exact, at a write per failure.
 * Behind a proxy, the source address is the proxy's unless Fastify's `trustProxy` is set: the
 * address bucket then throttles everyone behind it, and the prefix bucket is what protects.
 */
import type { FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { keyThrottlePrefix } from '../lib/ids.js';

export type AuthFailureReason = 'missing_key' | 'unknown_tenant_key' | 'not_admin_key' | 'throttled';

export interface AuthThrottleOptions {
  /** Wrong keys per address, and per key prefix, within a window before 429. Default 20. */
  maxFailures?: number;
  /** The window, in ms. Default 60,000 (1 min). */
  windowMs?: number;
}

export interface AuthGuard {
  /** Seconds until the request's address or key prefix may try again; undefined: not throttled. */
  throttledFor(req: FastifyRequest, key: string | undefined): number | undefined;
  /** Counts, logs (never the key) and, for a wrong key, charges its address and prefix. */
  failed(req: FastifyRequest, reason: AuthFailureReason, key: string | undefined): void;
}

/** Above this many buckets, expired ones are swept on the next failure (memory stays bounded by the rate). */
const SWEEP_ABOVE = 10_000;

interface Bucket {
  failures: number;
  resetAt: number;
  /** The 429s of this window were logged once already. */
  announced: boolean;
}

export function createAuthGuard(registry: Registry, opts: AuthThrottleOptions = {}, now: () => number = Date.now): AuthGuard {
  const maxFailures = opts.maxFailures ?? 20;
  const windowMs = opts.windowMs ?? 60_000;
  const buckets = new Map<string, Bucket>();
  const failures = new Counter({
    name: 'durable_jobs_auth_failures_total',
    help: 'Failed authentications of this API process by reason: missing_key, unknown_tenant_key, not_admin_key, throttled (answered 429)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });

  const names = (req: FastifyRequest, key: string | undefined) => [
    `ip:${req.ip}`,
    // A generated key's scheme (`dj_live_`) and 8 more characters: every real key shares the scheme.
    ...(key ? [`prefix:${keyThrottlePrefix(key)}`] : []),
  ];
  const live = (name: string, t: number) => {
    const b = buckets.get(name);
    return b && b.resetAt > t ? b : undefined;
  };

  return {
    throttledFor(req, key) {
      const t = now();
      let wait = 0;
      for (const name of names(req, key)) {
        const b = live(name, t);
        if (b && b.failures >= maxFailures) {
          wait = Math.max(wait, b.resetAt - t);
          if (!b.announced) {
            b.announced = true;
            req.log.warn(
              {
                event: 'auth_throttled',
                bucket: name.startsWith('ip:') ? 'address' : 'key_prefix',
                remoteAddr: req.ip,
                failures: b.failures,
              },
              'failed authentications throttled: answering 429 until the window ends',
            );
          }
        }
      }
      return wait > 0 ? Math.ceil(wait / 1000) : undefined;
    },

    failed(req, reason, key) {
      failures.inc({ reason });
      if (reason === 'throttled') return;
      // The route and the reason, never the key (nor its prefix: for a key chosen by hand, 8
      // characters can be most of it).
      req.log.warn(
        { event: 'auth_failed', reason, route: req.routeOptions.url, method: req.method, remoteAddr: req.ip },
        'authentication failed',
      );
      if (reason === 'missing_key') return;
      const t = now();
      if (buckets.size > SWEEP_ABOVE) for (const [name, b] of buckets) if (b.resetAt <= t) buckets.delete(name);
      for (const name of names(req, key)) {
        const b = live(name, t);
        if (b) b.failures++;
        else buckets.set(name, { failures: 1, resetAt: t + windowMs, announced: false });
      }
    },
  };
}
