import { FaultQueue } from './faults.js';
import { IdempotencyStore } from './idempotency.js';

export interface KeyEffects {
  applied: number;
  requests: number;
  path: string;
  requestTimes: string[];
}

/** What tests and drills read back to prove "exactly one effect per key". */
export class EffectsLedger {
  totalApplied = 0;
  readonly byKey = new Map<string, KeyEffects>();

  recordRequest(key: string, path: string): void {
    const entry = this.entry(key, path);
    entry.requests += 1;
    entry.requestTimes.push(new Date().toISOString());
  }

  recordApplied(key: string, path: string): void {
    this.entry(key, path).applied += 1;
    this.totalApplied += 1;
  }

  clear(): void {
    this.totalApplied = 0;
    this.byKey.clear();
  }

  private entry(key: string, path: string): KeyEffects {
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = { applied: 0, requests: 0, path, requestTimes: [] };
      this.byKey.set(key, entry);
    }
    return entry;
  }
}

/**
 * Counts requests being handled per tenant, including time held by delay faults, so
 * the product can prove its per-tenant concurrency caps from the provider's side.
 */
export class InFlightTracker {
  total = 0;
  peak = 0;
  readonly byTenant = new Map<string, number>();
  readonly peakByTenant = new Map<string, number>();

  /** Returns the matching leave function; calling it more than once is harmless. */
  enter(tenant: string): () => void {
    this.total += 1;
    const current = (this.byTenant.get(tenant) ?? 0) + 1;
    this.byTenant.set(tenant, current);
    this.peak = Math.max(this.peak, this.total);
    this.peakByTenant.set(tenant, Math.max(this.peakByTenant.get(tenant) ?? 0, current));
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.total -= 1;
      const remaining = (this.byTenant.get(tenant) ?? 1) - 1;
      if (remaining > 0) this.byTenant.set(tenant, remaining);
      else this.byTenant.delete(tenant);
    };
  }

  /** Requests still running are real, so peaks restart from them rather than from zero. */
  resetPeaks(): void {
    this.peak = this.total;
    this.peakByTenant.clear();
    for (const [tenant, n] of this.byTenant) this.peakByTenant.set(tenant, n);
  }
}

export interface Transcription {
  id: string;
  audioUrl: string;
  status: 'processing' | 'completed';
  text?: string;
}

/** Everything /__sim/reset clears. Cleared in place so holders of references stay valid. */
export class SimState {
  readonly idempotency = new IdempotencyStore();
  readonly effects = new EffectsLedger();
  readonly faults = new FaultQueue();
  readonly inFlight = new InFlightTracker();
  readonly transcriptions = new Map<string, Transcription>();

  reset(): void {
    this.idempotency.clear();
    this.effects.clear();
    this.faults.clear();
    this.inFlight.resetPeaks();
    this.transcriptions.clear();
  }

  effectsSnapshot(): Record<string, unknown> {
    const byKey: Record<string, unknown> = {};
    for (const [key, entry] of this.effects.byKey) byKey[key] = { ...entry, requestTimes: [...entry.requestTimes] };
    return {
      totalApplied: this.effects.totalApplied,
      byKey,
      peakInFlight: this.inFlight.peak,
      peakInFlightByTenant: Object.fromEntries(this.inFlight.peakByTenant),
      inFlight: this.inFlight.total,
      inFlightByTenant: Object.fromEntries(this.inFlight.byTenant),
    };
  }
}
