import type { Logger } from '../lib/logger.js';
import { SLOT_TTL_MS, type AttemptFence, type AttemptStore, type SlotRequest } from '../store/step-attempt.js';
import type { ConcurrencyLimits } from '../contract/job-types.js';
import { SlotUnavailableError } from '../lib/errors.js';

/** What one effect's slot is for: its job, the caps, and how the attempt waits. */
export interface SlotScope {
  jobId: string;
  jobType: string;
  tenantId: string;
  holder: string;
  attempt: number;
  limits: ConcurrencyLimits;
  /** Cap on upstream calls across every job type and tenant (`CONCURRENCY_TOTAL`). Default: none. */
  total?: number | undefined;
  /** When the attempt started: a wait moves the job's first execution start past it. */
  attemptStartedAt: Date;
  /**
   * The workflow waits for a slot (`SlotWaitArgs`): with none free, `acquireSlot` throws
   * `SlotUnavailableError` instead of polling here, holding no worker activity slot meanwhile.
   */
  waitInWorkflow: boolean;
  /**
   * The attempt follows a wait in the workflow and left the job `queued` (store/intent-attempts.ts
   * `startAttempt`): its first slot marks it running.
   */
  resumed: boolean;
  fence: AttemptFence | undefined;
}

export function slotRequest(s: Pick<SlotScope, 'jobType' | 'tenantId' | 'holder' | 'limits' | 'total'>): SlotRequest {
  return {
    jobType: s.jobType,
    tenantId: s.tenantId,
    holder: s.holder,
    perTenant: s.limits.perTenant,
    global: s.limits.global,
    total: s.total,
    ttlMs: SLOT_TTL_MS,
  };
}

export interface SlotWaitEnv {
  sleep(ms: number): Promise<void>;
}

/**
 * One upstream slot for the job's tenant, its type and (with a total cap) every type: the one the
 * effect's claim took (`taken`), or one taken now. While none is free the job shows as waiting
 * (status `queued` with the reason), not failing: waiting uses no retry attempt. With
 * `waitInWorkflow` the workflow waits instead (`SlotUnavailableError`: the job is registered as
 * a waiter, a release of its type wakes it). Returns the slot's lease and how long it waited (not
 * execution time). The caller holds the slot only for the call and frees it on every path.
 */
export async function acquireSlot(
  store: AttemptStore,
  env: SlotWaitEnv,
  log: Logger,
  s: SlotScope,
  taken: string | null,
): Promise<{ id: string; waitedMs: number }> {
  const req = slotRequest(s);
  let slot = taken ?? (await store.tryAcquireSlot(req));
  const reason = `waiting for an upstream slot (at most ${s.limits.perTenant} per tenant, ${s.limits.global} in total for ${s.jobType}${s.total !== undefined ? `, ${s.total} across all job types` : ''})`;
  if (!slot && s.waitInWorkflow) {
    // Registered first, then asked once more: a slot freed between the failed try and the
    // registration woke nobody (it had no waiter to name), and would otherwise stay free until
    // some waiter's timer. With this, the release that frees a slot is what wakes a waiter,
    // and the workflow's timer is only a safety net (workflows/step-activities.ts).
    await store.registerWaiter({ jobId: s.jobId, jobType: s.jobType, tenantId: s.tenantId });
    slot = await store.tryAcquireSlot(req);
    if (slot) {
      await store.forgetWaiter(s.jobId);
      if (s.resumed) await store.markRunning(s.jobId, s.attempt, s.fence, s.attemptStartedAt);
      return { id: slot, waitedMs: 0 };
    }
    // The first start this attempt set goes back: the job has not executed yet.
    await store.markWaiting(s.jobId, reason, s.fence, s.attemptStartedAt);
    throw new SlotUnavailableError(reason);
  }
  if (slot) {
    if (s.resumed) {
      // It waited in the workflow: no release should wake it any more.
      await store.forgetWaiter(s.jobId);
      await store.markRunning(s.jobId, s.attempt, s.fence, s.attemptStartedAt);
    }
    return { id: slot, waitedMs: 0 };
  }
  const waitStarted = Date.now();
  await store.markWaiting(s.jobId, reason, s.fence);
  log.info({ jobId: s.jobId, jobType: s.jobType }, 'waiting for a concurrency slot');
  for (let pause = 100; !slot; pause = Math.min(1_000, pause * 1.5)) {
    // Jittered polling: waiters do not wake in lockstep.
    await env.sleep(pause / 2 + Math.random() * pause);
    slot = await store.tryAcquireSlot(req);
  }
  const waitedMs = Date.now() - waitStarted;
  await store.markRunning(s.jobId, s.attempt, s.fence, s.attemptStartedAt);
  return { id: slot, waitedMs };
}
