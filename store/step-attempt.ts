/**
 * Every statement one step attempt makes, in the order it makes them (activities/step-attempt.ts
 * is the attempt; this is its store). The SQL stays with its table (intent-attempts.ts,
 * effects.ts, attempts.ts, activity-leases.ts, concurrency.ts, step-result.ts: one file per table,
 * the folded statements composing their CTE fragments), and this interface is the one door the
 * attempt goes through, so its writes can be read here in one list and a unit test can put an
 * in-memory store in its place.
 *
 * The crash-safe order, which the attempt keeps (each numbered write commits before the next step):
 * 1. `start`: the lease row (the fence, store/fence.ts), the job `running`, the gate's question,
 *    the setting and maybe the input, in one statement;
 * 2. `claimEffect`: the effect row (unique on its key), the upstream choice and the slot, before any call;
 * 3. after the call, at once `storeSuccess` (the provider's IDs, the attempt's row, the slot's
 *    release), or handed to `writeResult`, the step's last statement, which carries them;
 * 4. a failure: its `job_attempts` row, then the job `retrying` (fenced).
 */
import type pg from 'pg';
import { withTransaction } from '../lib/db.js';
import { flagLeaseExpired, leaseEnded, type LeaseKey, type LeaseOutcome } from './activity-leases.js';
import { recordAttempt, recordLostAttempt, type AttemptRecord } from './attempts.js';
import {
  forgetEnsuredSlots,
  forgetWaiter,
  registerWaiter,
  releaseSlot,
  renewSlots,
  tryAcquireSlot,
  type SlotRequest,
} from './concurrency.js';
import { getSetting, type DegradationSetting } from './degradation.js';
import {
  beginEffect,
  clearDoubt,
  countReconciliation,
  recordEffectFailure,
  recordEffectSuccess,
  reopenFailedEffect,
  setEffectUpstream,
  storeEffectSuccess,
  withdrawClaim,
  type ClaimedEffectRow,
  type EffectClaim,
  type EffectSuccess,
  type Upstream,
} from './effects.js';
import type { AttemptFence } from './fence.js';
import { loadInput, setJobUpstream } from './intents.js';
import { addExecutionSpan, markRetrying, markRunning, markWaiting, startAttempt } from './intent-attempts.js';
import type { AttemptStart, AttemptStartOptions } from './intent-attempts.js';
import { writeResultFenced } from './step-result.js';

export type { AttemptStart, AttemptStartOptions, AttemptFence, AttemptRecord, ClaimedEffectRow, EffectSuccess, LeaseKey, SlotRequest };

/** What the claim's follow-up transaction does before a reconciling or replayed call. */
export interface ReopenPlan {
  /** A refused effect a replay sends again: back to pending. */
  reopen: boolean;
  /** An in-doubt effect: its reconciliation counted. */
  reconcile: boolean;
  /** The upstream the in-doubt effect is reconciled with, recorded on the effect and the job. */
  upstream?: { jobId: string; upstream: Upstream; reason: string | null };
}

/** The step's last statement (store/step-result.ts `writeResultFenced`). */
export type ResultWrite = Parameters<typeof writeResultFenced>[5] & {
  jobId: string;
  attempt: number;
  result: unknown;
  notificationState: 'pending' | null;
};

export interface AttemptStore {
  // job_intents (+ the lease row and the gate's question in the same statement)
  start(jobId: string, attempt: number | null, fence: AttemptFence | undefined, opts: AttemptStartOptions): Promise<AttemptStart>;
  setting(): Promise<DegradationSetting>;
  loadInput(jobId: string): Promise<unknown>;
  markRunning(jobId: string, attempt: number, fence: AttemptFence | undefined, attemptStartedAt?: Date): Promise<boolean>;
  markWaiting(jobId: string, reason: string, fence: AttemptFence | undefined, attemptStartedAt?: Date): Promise<boolean>;
  markRetrying(
    jobId: string,
    attempt: number,
    error: { errorClass: string; message: string; statusCode?: number },
    next: Date,
    fence: AttemptFence | undefined,
  ): Promise<boolean>;
  addSpan(jobId: string, ms: number, attemptStartedAt: Date): Promise<void>;
  // job_attempts and activity_leases
  recordAttempt(a: AttemptRecord): Promise<void>;
  /** The attempt before this one left its lease open: flagged and its `lease_expired` row written. Returns whether it was. */
  recordLost(previous: LeaseKey, step: string, offset: number): Promise<boolean>;
  endLease(key: LeaseKey, outcome: LeaseOutcome): Promise<void>;
  // effects (+ the slot and the upstream in the claim)
  claimEffect(
    e: { effectKey: string; jobId: string; tenantId: string; step: string; requestHash: string },
    fence: AttemptFence | undefined,
    claim: EffectClaim,
  ): Promise<ClaimedEffectRow | undefined>;
  reopen(effectKey: string, plan: ReopenPlan, fence: AttemptFence | undefined): Promise<void>;
  storeSuccess(e: EffectSuccess): Promise<{ stored: boolean; woken: string | null }>;
  storeLookedUp(
    effectKey: string,
    found: { providerRequestId: string | null; providerId: string | null; response: unknown },
    fence: AttemptFence | undefined,
  ): Promise<void>;
  failEffect(effectKey: string, fence: AttemptFence | undefined): Promise<void>;
  clearDoubt(effectKey: string, fence: AttemptFence | undefined): Promise<void>;
  withdrawClaim(effectKey: string, created: boolean, fence: AttemptFence | undefined): Promise<void>;
  // concurrency slots
  tryAcquireSlot(r: SlotRequest): Promise<string | null>;
  releaseSlot(id: string): Promise<string | null>;
  registerWaiter(w: { jobId: string; jobType: string; tenantId: string }): Promise<void>;
  forgetWaiter(jobId: string): Promise<void>;
  /** Keeps a held slot's lease alive until the returned function is called. */
  renewing(id: string): () => void;
  // the step's last statement
  writeResult(w: ResultWrite): Promise<{ landed: boolean; effectStored: boolean; woken: string | null }>;
}

/** The attempt's store on our Postgres. */
export function pgAttemptStore(pool: pg.Pool): AttemptStore {
  return {
    start: (jobId, attempt, fence, opts) => startAttempt(pool, jobId, attempt, fence, opts),
    setting: () => getSetting(pool),
    loadInput: (jobId) => loadInput(pool, jobId),
    markRunning: (jobId, attempt, fence, at) => markRunning(pool, jobId, attempt, fence, at ? { attemptStartedAt: at } : undefined),
    markWaiting: (jobId, reason, fence, at) => {
      // Slot rows deleted behind this process's back (a reset table) are created again next time.
      forgetEnsuredSlots();
      return markWaiting(pool, jobId, reason, fence, at);
    },
    markRetrying: (jobId, attempt, error, next, fence) => markRetrying(pool, jobId, attempt, error, next, fence),
    addSpan: (jobId, ms, at) => addExecutionSpan(pool, jobId, ms, at),
    recordAttempt: (a) => recordAttempt(pool, a),
    recordLost: async (previous, step, offset) => {
      const lost = await flagLeaseExpired(pool, previous, undefined);
      if (lost.flagged) await recordLostAttempt(pool, previous, lost.step ?? step, offset);
      return lost.flagged;
    },
    endLease: (key, outcome) => leaseEnded(pool, key, outcome),
    claimEffect: (e, fence, claim) => beginEffect(pool, e, fence, claim),
    reopen: (effectKey, plan, fence) =>
      withTransaction(pool, async (tx) => {
        if (plan.reopen) await reopenFailedEffect(tx, effectKey);
        if (plan.reconcile) await countReconciliation(tx, effectKey, fence);
        if (plan.upstream) {
          await setEffectUpstream(tx, effectKey, plan.upstream.upstream);
          await setJobUpstream(tx, plan.upstream.jobId, plan.upstream.upstream, plan.upstream.reason);
        }
      }),
    storeSuccess: (e) => storeEffectSuccess(pool, e),
    storeLookedUp: async (effectKey, f, fence) => {
      await recordEffectSuccess(pool, effectKey, f.providerRequestId, f.providerId, f.response, fence);
    },
    failEffect: (effectKey, fence) => recordEffectFailure(pool, effectKey, null, fence),
    clearDoubt: (effectKey, fence) => clearDoubt(pool, effectKey, fence),
    withdrawClaim: (effectKey, created, fence) => withdrawClaim(pool, effectKey, created, fence),
    tryAcquireSlot: (r) => tryAcquireSlot(pool, r),
    releaseSlot: (id) => releaseSlot(pool, id),
    registerWaiter: (w) => registerWaiter(pool, w),
    forgetWaiter: (jobId) => forgetWaiter(pool, jobId),
    renewing: (id) => renewing(pool, id),
    writeResult: ({ jobId, attempt, result, notificationState, ...also }) =>
      writeResultFenced(pool, jobId, attempt, result, notificationState, also),
  };
}

/** A slot lease outlives a few missed renewals, and a dead worker's slot returns within this time. */
export const SLOT_TTL_MS = 15_000;
const RENEW_EVERY_MS = 5_000;

/**
 * The slot leases this process holds, per pool, renewed together: one UPDATE per tick for all
 * calls in flight instead of one per call (and one timer instead of one per call).
 */
const held = new Map<pg.Pool, { ids: Set<string>; timer: NodeJS.Timeout }>();

function renewing(pool: pg.Pool, id: string): () => void {
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
  const mine = h;
  mine.ids.add(id);
  return () => {
    mine.ids.delete(id);
    if (mine.ids.size === 0 && held.get(pool) === mine) {
      clearInterval(mine.timer);
      held.delete(pool);
    }
  };
}
