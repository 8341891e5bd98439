/**
 * The queue-health sampler: every API process (server/run.ts) takes the queue-health snapshot on
 * a schedule and stores its trend figures in `health_samples`, one row per minute (the latest
 * write of the minute wins, so several API processes agree on one point). The console's plots and
 * `history.samples` read that stored series; before, a sample was written only while someone was
 * reading the health page, so the plots were empty for every minute nobody looked (review D11).
 * The retention cleanup deletes old rows (`health_samples`, default 1 day); the sampler also
 * prunes past a day whenever it opens a new minute.
 */
import type { Logger } from '../lib/logger.js';
import { pruneSamples, writeSample } from '../store/health.js';
import { collectQueueHealth, sampleOf, type HealthDeps } from './queue-health.js';

/** Default tick: four points per minute, the last of which stays. */
export const HEALTH_SAMPLE_INTERVAL_MS = 15_000;

export interface HealthSamplerOptions extends HealthDeps {
  log: Logger;
  /** Default HEALTH_SAMPLE_INTERVAL_MS. */
  intervalMs?: number;
}

export interface HealthSampler {
  /** One sample now (the timer calls it; tests may too). Never throws: a failed sample is logged. */
  sampleNow(): Promise<boolean>;
  /** Stops the timer and waits for a sample in flight (call it before ending the pool). */
  stop(): Promise<void>;
}

/** Takes a first sample at once, then one per interval; a tick while the previous one runs is skipped. */
export function startHealthSampler(o: HealthSamplerOptions): HealthSampler {
  const { log, intervalMs = HEALTH_SAMPLE_INTERVAL_MS, ...deps } = o;
  let inFlight: Promise<boolean> | undefined;
  let failing = false;

  async function sample(): Promise<boolean> {
    try {
      const figures = sampleOf(await collectQueueHealth(deps));
      if (await writeSample(deps.pool, figures)) await pruneSamples(deps.pool);
      if (failing) log.info('queue-health sampling works again');
      failing = false;
      return true;
    } catch (err) {
      // Once per outage, not every tick: the plots show the gap anyway.
      if (!failing) log.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, 'queue-health sample failed');
      failing = true;
      return false;
    }
  }
  const sampleNow = (): Promise<boolean> => {
    inFlight ??= sample().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  void sampleNow();
  const timer = setInterval(() => void sampleNow(), intervalMs);
  timer.unref();
  return {
    sampleNow,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
