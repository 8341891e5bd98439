// The baselines' activities: no Postgres at all. `bareActivity` does nothing (with `holdMs` it
// stays in flight that long: the memory baseline holds 1,000 of them at once); the twin's
// `bareCall` heartbeats at once, as the product's step does, and makes the same upstream call
// as `summarize` (POST /v1/summaries with an Idempotency-Key), without any bookkeeping.
import { Context } from '@temporalio/activity';

export interface BareCounter {
  inFlight: number;
  peak: number;
  completed: number;
}

export interface BareCall {
  /** Base URL of the provider (the simulator); no call when absent. */
  providerUrl?: string;
  key: string;
  text: string;
  /** The call's timeout, as the product's `upstreamTimeoutMs`; default 15 s (the memory run raises both past its hold). */
  timeoutMs?: number;
}

export function createBareActivities(counter: BareCounter = { inFlight: 0, peak: 0, completed: 0 }) {
  const track = async <T>(fn: () => Promise<T>): Promise<T> => {
    counter.inFlight++;
    counter.peak = Math.max(counter.peak, counter.inFlight);
    try {
      return await fn();
    } finally {
      counter.inFlight--;
      counter.completed++;
    }
  };
  return {
    async bareActivity(holdMs: number): Promise<void> {
      await track(async () => {
        if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
      });
    },
    async bareCall(call: BareCall): Promise<unknown> {
      return track(async () => {
        const ctx = Context.current();
        ctx.heartbeat();
        if (!call.providerUrl) return null;
        // A held call keeps heartbeating, as the product's step does (its lease); a fast one never reaches the first beat.
        const beat = setInterval(() => ctx.heartbeat(), 3_000);
        try {
          const res = await fetch(`${call.providerUrl}/v1/summaries`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': call.key, 'x-tenant-id': 'bench-twin' },
            body: JSON.stringify({ text: call.text }),
            signal: AbortSignal.timeout(call.timeoutMs ?? 15_000),
          });
          const body = (await res.json()) as unknown;
          if (res.status >= 300) throw new Error(`upstream answered ${res.status}`);
          return body;
        } finally {
          clearInterval(beat);
        }
      });
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
