import { Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { forgetEnsuredSlots, forgetWaiter, registerWaiter, releaseSlot, renewSlots, tryAcquireSlot } from '../store/concurrency.js';
import { slotFreedSignal } from '../contract/messages.js';
import { markRunning, markWaiting } from '../store/intents.js';
import { currentFence } from './attempt.js';
import type { ConcurrencyLimits } from '../contract/job-types.js';
import { SlotUnavailableError } from '../lib/errors.js';

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
  /** Cap on upstream calls across every job type and tenant (`CONCURRENCY_TOTAL`). Default: none. */
  total?: number | undefined;
  /** When the attempt started: a wait moves the job's first execution start past it. */
  attemptStartedAt?: Date;
  /** Told how long this call waited for its slot (0 when one was free): not execution time. */
  onWaited?: (ms: number) => void;
  /**
   * The workflow waits for a slot (`SlotWaitArgs`): with none free, the call throws
   * `SlotUnavailableError` instead of polling here, holding no worker activity slot meanwhile.
   */
  waitInWorkflow?: boolean;
  /**
   * The attempt follows a wait in the workflow and left the job `queued` (store/intents.ts
   * `startAttempt`): its first slot marks it running. Set to false once done (shared per attempt).
   */
  resumed?: { pending: boolean };
}

/**
 * The leases this process holds, per pool, renewed together: one UPDATE per tick for all
 * calls in flight instead of one per call (and one timer instead of one per call).
 */
const held = new Map<pg.Pool, { ids: Set<string>; timer: NodeJS.Timeout }>();

function hold(pool: pg.Pool, id: string): void {
  let h = held.get(pool);
  if (!h) {
    const ids = new Set<string>();
    const timer = setInterval(() => {
      if (ids.size > 0) renewSlots(pool, [...ids], SLOT_TTL_MS).catch(() => undefined);
    }, RENEW_EVERY_MS);
    timer.unref();
    h = { ids, timer };
    held.set(pool, h);
  }
  h.ids.add(id);
}

function unhold(pool: pg.Pool, id: string): void {
  const h = held.get(pool);
  if (!h) return;
  h.ids.delete(id);
  if (h.ids.size === 0) {
    clearInterval(h.timer);
    held.delete(pool);
  }
}

function slotRequest(s: SlotScope) {
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

/** The slot a guarded call holds, for the caller to free in its own statement. */
export interface SlotRelease {
  slotId: string;
  /** The caller's statement that freed it committed. */
  released(): void;
}

/**
 * One effect's slot: the effect's claim statement tries to take it (`request`, and `took` with
 * what it got: one round trip fewer when a slot is free), `guard` then runs the call holding
 * it (waiting for one first if the claim found none or did not try). Call `guard` right after
 * the claim: a slot the claim took is released by the guard, and expires by itself otherwise.
 */
export function effectSlot(deps: { pool: pg.Pool; log: Logger }, s: SlotScope) {
  let taken: string | null = null;
  return {
    request: slotRequest(s),
    took: (id: string | null): void => {
      taken = id;
    },
    guard: <T>(call: (release: SlotRelease) => Promise<T>): Promise<T> => {
      const pre = taken;
      taken = null;
      return withSlot(deps, s, call, pre);
    },
  };
}

/**
 * Runs `fn` holding one upstream slot for the job's tenant, its type and (with a total cap)
 * every type. While no slot is free the job shows as waiting (status `queued` with the
 * reason), not failing: waiting uses no retry attempt. The activity keeps heartbeating
 * meanwhile (the caller wraps it), so a cancelled job stops waiting.
 *
 * `fn` gets the slot's lease ID: the caller frees it in the statement that records the
 * effect's success (store/effects.ts `recordEffectSuccess`), so the release costs no round trip
 * of its own, and says so with `released()` once that statement committed. Otherwise (it
 * threw, or never got that far) the slot is released here (releasing twice is harmless).
 */
export async function withSlot<T>(
  deps: { pool: pg.Pool; log: Logger },
  s: SlotScope,
  fn: (release: SlotRelease) => Promise<T>,
  taken?: string | null,
): Promise<T> {
  const ctx = Context.current();
  const req = slotRequest(s);
  let slot = taken ?? (await tryAcquireSlot(deps.pool, req));
  const reason = `waiting for an upstream slot (at most ${s.limits.perTenant} per tenant, ${s.limits.global} in total for ${s.jobType}${s.total !== undefined ? `, ${s.total} across all job types` : ''})`;
  if (!slot && s.waitInWorkflow) {
    // The first start this attempt set goes back: the job has not executed yet.
    await markWaiting(deps.pool, s.jobId, reason, currentFence(), s.attemptStartedAt);
    // The next release of its type may wake it (`wakeSlotWaiter`); its timer ends the wait otherwise.
    await registerWaiter(deps.pool, { jobId: s.jobId, jobType: s.jobType, tenantId: s.tenantId });
    // Slot rows deleted behind this process's back (a reset table) are created again next time.
    forgetEnsuredSlots();
    throw new SlotUnavailableError(reason);
  }
  if (slot && s.resumed?.pending) {
    s.resumed.pending = false;
    // It waited in the workflow: no release should wake it any more.
    await forgetWaiter(deps.pool, s.jobId);
    await markRunning(
      deps.pool,
      s.jobId,
      s.attempt,
      currentFence(),
      s.attemptStartedAt ? { attemptStartedAt: s.attemptStartedAt } : undefined,
    );
  }
  if (!slot) {
    const waitStarted = Date.now();
    await markWaiting(deps.pool, s.jobId, reason, currentFence());
    deps.log.info({ jobId: s.jobId, jobType: s.jobType }, 'waiting for a concurrency slot');
    // Slot rows deleted behind this process's back (a reset table) are created again.
    forgetEnsuredSlots();
    let pause = 100;
    while (!slot) {
      // Jittered polling: waiters do not wake in lockstep.
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
  const id = slot;
  hold(deps.pool, id);
  let releasedInCaller = false;
  try {
    const result = await fn({
      slotId: id,
      released: () => {
        releasedInCaller = true;
      },
    });
    // `fn` returned: the statement that released the slot committed.
    if (releasedInCaller) return result;
    await release(deps, s.jobId, id);
    return result;
  } catch (err) {
    // The caller's transaction may have rolled back its release: release again.
    await release(deps, s.jobId, id);
    throw err;
  } finally {
    unhold(deps.pool, id);
  }
}

async function release(deps: { pool: pg.Pool; log: Logger }, jobId: string, id: string): Promise<void> {
  await releaseSlot(deps.pool, id).then(
    (woken) => wakeSlotWaiter(deps.log, woken),
    (e: Error) => deps.log.warn({ jobId, err: e.message }, 'could not release slot; it expires by itself'),
  );
}

/**
 * Signals the workflow of the job a freed slot woke (`releaseSlot` and the statements that carry
 * its CTE name it), so it tries again now instead of at the end of its back-off. Not awaited:
 * the signal is a hint, and a lost one (the job finished meanwhile, Temporal unreachable) costs
 * that job the rest of its timer's wait, nothing else. Outside an activity there is no client
 * to send it with.
 */
export function wakeSlotWaiter(log: Logger, jobId: string | null | undefined): void {
  if (!jobId) return;
  let client;
  try {
    client = Context.current().client;
  } catch {
    return;
  }
  client.workflow
    .getHandle(jobId)
    .signal(slotFreedSignal)
    .catch((e: Error) => log.info({ jobId, err: e.message }, 'could not wake a job waiting for a slot; its timer will'));
}
