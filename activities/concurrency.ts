import { Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { releaseSlot, renewSlot, tryAcquireSlot } from '../store/concurrency.js';
import { markRunning, markWaiting } from '../store/intents.js';
import { currentFence } from './attempt.js';
import type { ConcurrencyLimits } from '../contract/job-types.js';

/** A lease outlives a few missed renewals, and a dead worker's slot returns within this time. */
const SLOT_TTL_MS = 15_000;
const RENEW_EVERY_MS = 5_000;

export interface SlotScope {
  jobId: string;
  jobType: string;
  tenantId: string;
  holder: string;
  attempt: number;
  limits: ConcurrencyLimits;
  /** When the attempt started: a wait moves the job's first execution start past it. */
  attemptStartedAt?: Date;
  /** Told how long this call waited for its slot (0 when one was free): not execution time. */
  onWaited?: (ms: number) => void;
}

/**
 * Runs `fn` holding one upstream slot for the job's tenant and type. While no slot is free
 * the job shows as waiting (status `queued` with the reason), not failing: waiting uses no
 * retry attempt. The activity keeps heartbeating meanwhile (the caller wraps it), so a
 * cancelled job stops waiting.
 */
export async function withSlot<T>(deps: { pool: pg.Pool; log: Logger }, s: SlotScope, fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const req = {
    jobType: s.jobType,
    tenantId: s.tenantId,
    holder: s.holder,
    perTenant: s.limits.perTenant,
    global: s.limits.global,
    ttlMs: SLOT_TTL_MS,
  };
  let slot = await tryAcquireSlot(deps.pool, req);
  if (!slot) {
    const waitStarted = Date.now();
    await markWaiting(
      deps.pool,
      s.jobId,
      `waiting for an upstream slot (at most ${s.limits.perTenant} per tenant, ${s.limits.global} in total for ${s.jobType})`,
      currentFence(),
    );
    deps.log.info({ jobId: s.jobId, jobType: s.jobType }, 'waiting for a concurrency slot');
    let pause = 100;
    while (!slot) {
      // Jittered polling: waiters do not wake in lockstep and stampede the lock.
      await ctx.sleep(pause / 2 + Math.random() * pause);
      pause = Math.min(1_000, pause * 1.5);
      slot = await tryAcquireSlot(deps.pool, req);
    }
    s.onWaited?.(Date.now() - waitStarted);
    await markRunning(
      deps.pool,
      s.jobId,
      s.attempt,
      currentFence(),
      s.attemptStartedAt ? { attemptStartedAt: s.attemptStartedAt } : undefined,
    );
  }
  const renew = setInterval(() => {
    renewSlot(deps.pool, slot!, SLOT_TTL_MS).catch(() => undefined);
  }, RENEW_EVERY_MS);
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await releaseSlot(deps.pool, slot).catch((e: Error) =>
      deps.log.warn({ jobId: s.jobId, err: e.message }, 'could not release slot; it expires by itself'),
    );
  }
}
