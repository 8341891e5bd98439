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
        Context.current().heartbeat();
        if (!call.providerUrl) return null;
        const res = await fetch(`${call.providerUrl}/v1/summaries`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': call.key, 'x-tenant-id': 'bench-twin' },
          body: JSON.stringify({ text: call.text }),
          signal: AbortSignal.timeout(15_000),
        });
        const body = (await res.json()) as unknown;
        if (res.status >= 300) throw new Error(`upstream answered ${res.status}`);
        return body;
      });
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
