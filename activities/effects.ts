import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { withTransaction } from '../lib/db.js';
import { effectKeyFor, inputHash } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { recordAttempt } from '../store/attempts.js';
import {
  beginEffect,
  clearDoubt,
  countReconciliation,
  recordEffectFailure,
  recordEffectSuccess,
  storeEffectSuccess,
  reopenFailedEffect,
  withdrawClaim,
  type ClaimedEffectRow,
  type EffectRow,
  type EffectSuccess,
} from '../store/effects.js';
import type { SlotRequest } from '../store/concurrency.js';
import { NonRetryableError, RetryableError, SlotUnavailableError } from '../lib/errors.js';
import { attemptNumber, currentFence } from './attempt.js';
import { chooseUpstream, upstreamFor, type FallbackPlan } from './fallback.js';
import { wakeSlotWaiter, type SlotRelease } from './concurrency.js';
import type { Provider } from './provider.js';
import type { EffectCall, Upstream } from '../job-api/upstream.js';
import { providerAdapter, upstreamAdapter, type Answer, type EffectAdapter } from './upstream-call.js';

export interface EffectDeps {
  pool: pg.Pool;
  provider: Provider;
  log: Logger;
  fallbackProvider?: Provider | undefined;
}

/**
 * What the effect sends, and to whom: a declared upstream with the step's own call
 * (`ctx.effect(step, call, { upstream })`), or the worker's provider in the simulator's
 * dialect (`ctx.effect(step, path, body)`, the outbox) under the job type's `upstream`
 * declaration. Only the request and its classification differ; the ledger is the same.
 */
export type EffectRequest =
  | {
      path: string;
      body: Record<string, unknown>;
      /** The job type's upstream declaration (JobTypeInfo.upstream). Default: idempotent by key, no lookup. */
      upstream?: { idempotentByKey: boolean; lookupByKey: boolean } | undefined;
    }
  | { call: EffectCall; through: Upstream };

export type EffectSpec = EffectRequest & {
  /** Effects belong to the business intent (the original job ID, also for replays). */
  effectScope: string;
  jobId: string;
  tenantId: string;
  /** The step's name; with the scope it makes the effect key. Renaming a step changes its key. */
  step: string;
  timeoutMs: number;
  startedAt: Date;
  /** The key fixed when the effect was planned (an outbox row's); default `effectScope:step`. */
  effectKey?: string;
  /**
   * Wraps the upstream call only (not reuse): the concurrency slot. It passes `call` a
   * function that releases the slot inside the transaction recording the success (one
   * commit instead of two); on any other path it releases the slot itself. Default: none.
   */
  guard?: <T>(call: (release?: SlotRelease) => Promise<T>) => Promise<T>;
  /**
   * With `guard`: the slot the claim statement tries to take for a fresh call (not a
   * reconciliation, which may end without a call); `took` hands the guard what it got.
   */
  claimSlot?: { request: SlotRequest; took(id: string | null): void };
  /** Set when the job type declares a fallback upstream: the operator's decision for it (activities/fallback.ts). */
  fallback?: FallbackPlan | undefined;
  /**
   * Takes a fresh call's success (the provider's IDs, the attempt's row, the slot's release)
   * instead of committing it here: the caller commits it in its next statement, before the
   * activity returns (activities/job-steps.ts, `storeWithResult`). Default: committed here.
   */
  handOff?: ((success: EffectSuccess) => void) | undefined;
};

export interface EffectResult<R = Record<string, unknown>> {
  effectKey: string;
  providerId: string | null;
  providerRequestId: string | null;
  /** The upstream's response, as stored (JSON): the same on a fresh call, a reuse and a reconcile. */
  response: R;
  /** How this attempt got the result: a fresh call, a stored result, or a reconciling call. */
  via: 'executed' | 'reused' | 'reconciled';
}

/**
 * The crash-safe order for one external effect:
 * 1. claim the effect row (unique on the effect key);
 * 2. if a previous attempt already stored a success, reuse it without calling;
 * 3. if a previous attempt left it pending, it may have reached the upstream: call again
 *    with the same Idempotency-Key (the upstream answers with its first response) and
 *    count a reconciliation;
 * 4. store the provider's IDs as soon as the response arrives, before anything else.
 */
export async function runEffect(deps: EffectDeps, s: EffectSpec): Promise<EffectResult> {
  const effectKey = s.effectKey ?? effectKeyFor(s.effectScope, s.step);
  // Temporal's attempt, or a local activity's as Postgres numbered it (activities/attempt.ts).
  const attempt = attemptNumber();
  // Every effect-row write is fenced: a stale attempt (a newer one has started) changes nothing.
  const fence = currentFence();
  const base = { jobId: s.jobId, step: s.step, attempt, startedAt: s.startedAt };
  // Steps 1-3, and for an effect sent afresh its upstream choice and slot, in one statement:
  // one commit before the call, which is what the fallback rule needs (an effect in doubt
  // stays with the upstream it was sent to). A refusal found here is thrown after the
  // commit, so the claim stays recorded. The rarer paths (reuse, reconciliation, a replayed
  // refusal) add their writes in a transaction of their own, still before any call.
  const afresh = s.fallback
    ? chooseUpstream({ inserted: true, was_in_doubt: false }, s.fallback, deps.fallbackProvider !== undefined)
    : undefined;
  const claimed = await beginEffect(
    deps.pool,
    { effectKey, jobId: s.effectScope, tenantId: s.tenantId, step: s.step, requestHash: requestHashOf(s) },
    fence,
    {
      upstream: afresh,
      replay: s.effectScope !== s.jobId,
      jobId: s.jobId,
      slot: s.guard ? s.claimSlot?.request : undefined,
    },
  );
  s.claimSlot?.took(claimed?.slot_id ?? null);
  const claim = await decideClaim(deps, s, claimed, { effectKey, fence, base, afresh });
  if (claim.kind === 'stale')
    throw new RetryableError(`stale attempt ${attempt}: a newer attempt of this step has started`, { errorClass: 'stale_attempt' });
  if (claim.kind === 'refused')
    throw new NonRetryableError(`effect ${s.step} failed permanently before; not calling again`, { errorClass: 'effect_failed' });
  if (claim.kind === 'no-upstream') throw claim.err;
  if (claim.kind === 'reused') {
    const row = claim.row;
    deps.log.info({ jobId: s.jobId, effectKey, step: s.step }, 'effect already applied; reusing stored result');
    return {
      effectKey,
      providerId: row.provider_id,
      providerRequestId: row.provider_request_id,
      response: row.result as Record<string, unknown>,
      via: 'reused',
    };
  }
  const { row, reconciling, provider } = claim;
  const adapter = adapterFor(s, provider);
  if (row.state === 'failed')
    deps.log.info({ jobId: s.jobId, effectKey, step: s.step }, 'replay: calling a previously refused effect again');
  if (reconciling) {
    const known = await lookUpInDoubt(deps, s, adapter, effectKey, fence);
    if (known) {
      await recordAttempt(deps.pool, { ...base, outcome: 'reconciled', statusCode: known.status });
      deps.log.info(
        { jobId: s.jobId, effectKey, step: s.step, upstream: adapter.name, providerId: known.providerId },
        'in-doubt effect was applied upstream (looked up by key); not calling again',
      );
      return {
        effectKey,
        providerId: known.providerId,
        providerRequestId: known.providerRequestId,
        response: known.response as Record<string, unknown>,
        via: 'reconciled',
      };
    }
  }
  // The call, then at once one statement: the provider's IDs, the attempt's row and (with a
  // guard) the slot's release. Its own commit (a fence refusal of the effect row only logs),
  // or, handed off, the caller's next one.
  const callAndRecord = async (release?: SlotRelease) => {
    let answer;
    try {
      answer = await adapter.call({ effectKey, attempt, timeoutMs: s.timeoutMs, signal: Context.current().cancellationSignal });
    } catch (err) {
      if (err instanceof NonRetryableError) await recordEffectFailure(deps.pool, effectKey, null, fence);
      // 429 and 4xx mean "not applied"; 5xx, timeouts and resets leave the effect in doubt. So
      // does a 409 "key in progress": the request still running (often our own earlier
      // attempt's) may apply it, so the next attempt must reconcile, not assume nothing happened.
      if (
        err instanceof RetryableError &&
        err.details.statusCode !== undefined &&
        err.details.statusCode < 500 &&
        err.details.errorClass !== 'request_in_progress'
      )
        await clearDoubt(deps.pool, effectKey, fence);
      throw err;
    }
    const success: EffectSuccess = {
      effectKey,
      providerRequestId: answer.providerRequestId,
      providerId: answer.providerId,
      result: answer.response,
      fence,
      attempt: { ...base, outcome: reconciling ? 'reconciled' : 'succeeded', statusCode: answer.status },
      releaseSlotId: release?.slotId ?? null,
    };
    // Handed off, the slot is the caller's to free: with the success, or by expiring if that never commits.
    const stored = s.handOff ? (s.handOff(success), true) : await storeSuccess(deps, success);
    release?.released();
    return { answer, stored };
  };
  const { answer, stored } = s.guard
    ? await guarded(deps, s.guard, callAndRecord, { effectKey, fence, reconciling, created: row.inserted })
    : await callAndRecord();
  if (!stored) warnStale(deps.log, { jobId: s.jobId, effectKey, step: s.step, attempt });
  const providerId = answer.providerId;
  deps.log.info({ jobId: s.jobId, effectKey, step: s.step, upstream: adapter.name, providerId, reconciled: reconciling }, 'effect applied');
  return {
    effectKey,
    providerId,
    providerRequestId: answer.providerRequestId,
    response: answer.response as Record<string, unknown>,
    via: reconciling ? 'reconciled' : 'executed',
  };
}

/** The request and its classification: a declared upstream's call, or the chosen provider in the simulator's dialect. */
function adapterFor(s: EffectSpec, provider: Provider): EffectAdapter {
  if ('call' in s) return upstreamAdapter(s.through, s.call);
  return providerAdapter(provider, {
    step: s.step,
    path: s.path,
    body: s.body,
    tenantId: s.tenantId,
    upstream: s.upstream ?? { idempotentByKey: true, lookupByKey: false },
  });
}

/** Evidence of what was (or will be) sent: the body for a provider request; a call's is opaque, so its upstream's name. */
function requestHashOf(s: EffectSpec): string {
  return 'call' in s ? inputHash(s.step, { upstream: s.through.name }) : inputHash(s.step, s.body);
}

/**
 * The call under its slot's guard. No slot free and the workflow waits for one
 * (`SlotUnavailableError`): nothing was sent, so the claim is taken back (`withdrawClaim`: a
 * row it created goes, else its doubt is cleared; the next schedule sends it afresh, not as a
 * reconciliation). An effect that was in doubt before this attempt stays in doubt.
 */
async function guarded<T>(
  deps: EffectDeps,
  guard: NonNullable<EffectSpec['guard']>,
  call: (release?: SlotRelease) => Promise<T>,
  c: { effectKey: string; fence: ReturnType<typeof currentFence>; reconciling: boolean; created: boolean },
): Promise<T> {
  try {
    return await guard(call);
  } catch (err) {
    if (err instanceof SlotUnavailableError && !c.reconciling) await withdrawClaim(deps.pool, c.effectKey, c.created, c.fence);
    throw err;
  }
}

/**
 * Commits a success on its own (one statement) and wakes the job its freed slot names; returns
 * whether the fence let the effect row change.
 */
export async function storeSuccess(deps: { pool: pg.Pool; log: Logger }, e: EffectSuccess): Promise<boolean> {
  const { stored, woken } = await storeEffectSuccess(deps.pool, e);
  wakeSlotWaiter(deps.log, woken);
  return stored;
}

/** A success whose effect-row write the fence refused (the attempt and slot rows are written anyway). */
export function warnStale(log: Logger, at: { jobId: string; effectKey: string; step: string; attempt: number }): void {
  log.warn(at, 'stale attempt: a newer attempt superseded it; its effect-row write was refused');
}

type Claim =
  | { kind: 'stale' }
  | { kind: 'reused'; row: EffectRow }
  | { kind: 'refused' }
  | { kind: 'no-upstream'; err: RetryableError }
  | { kind: 'call'; row: EffectRow; reconciling: boolean; provider: Provider };

/** What the claimed row means for this attempt, with the writes the rarer paths need (one transaction). */
async function decideClaim(
  deps: EffectDeps,
  s: EffectSpec,
  row: ClaimedEffectRow | undefined,
  c: {
    effectKey: string;
    fence: ReturnType<typeof currentFence>;
    base: { jobId: string; step: string; attempt: number; startedAt: Date };
    afresh: { upstream: 'primary' | 'fallback'; reason: string | null } | undefined;
  },
): Promise<Claim> {
  if (!row) return { kind: 'stale' };
  if (row.state === 'succeeded') {
    await recordAttempt(deps.pool, { ...c.base, outcome: 'reused' });
    return { kind: 'reused', row };
  }
  // Only a replay (an operator's decision, after fixing the cause) calls a refused effect again.
  if (row.state === 'failed' && s.effectScope === s.jobId) return { kind: 'refused' };
  const reconciling = !row.inserted && row.was_in_doubt;
  // Sent afresh: the claim recorded the upstream (when the type declares a fallback); the
  // fallback is chosen only when this worker has one (chooseUpstream).
  const afresh = (): Provider => {
    if (c.afresh?.upstream !== 'fallback') return deps.provider;
    deps.log.warn({ jobId: s.jobId, effectKey: c.effectKey, reason: c.afresh.reason }, 'calling the fallback upstream');
    return deps.fallbackProvider!;
  };
  if (!reconciling && row.state !== 'failed') return { kind: 'call', row, reconciling, provider: afresh() };
  return withTransaction(deps.pool, async (tx) => {
    if (row.state === 'failed') await reopenFailedEffect(tx, c.effectKey);
    if (reconciling) await countReconciliation(tx, c.effectKey, c.fence);
    // Decided after the claim: an effect in doubt stays with the upstream it was sent to.
    if (!reconciling) return { kind: 'call' as const, row, reconciling, provider: afresh() };
    try {
      const provider = s.fallback
        ? await upstreamFor(deps, { effectKey: c.effectKey, jobId: s.jobId, row, plan: s.fallback }, tx)
        : deps.provider;
      return { kind: 'call' as const, row, reconciling, provider };
    } catch (err) {
      if (!(err instanceof RetryableError)) throw err;
      return { kind: 'no-upstream' as const, err };
    }
  });
}

/**
 * Before re-sending an in-doubt effect: for an upstream that answers lookups by key, ask
 * whether it was applied. Completed: its stored answer (with the original request's ID) is
 * recorded and returned (no second call). In progress: retry later, the effect stays in
 * doubt. Unknown: not applied, so the call below sends it. Without a lookup, an upstream that
 * is not idempotent by key is never re-sent blind: the effect stops for an operator.
 */
async function lookUpInDoubt(
  deps: EffectDeps,
  s: EffectSpec,
  adapter: EffectAdapter,
  effectKey: string,
  fence: ReturnType<typeof currentFence>,
): Promise<Answer | undefined> {
  if (adapter.inDoubt === 'resend') return undefined;
  if (adapter.inDoubt === 'stop') {
    throw new NonRetryableError(`effect ${s.step} is in doubt and its upstream is not idempotent by key: not sending it again`, {
      errorClass: 'effect_in_doubt',
      upstream: adapter.name,
    });
  }
  const found = await adapter.lookup(effectKey, { signal: Context.current().cancellationSignal, timeoutMs: s.timeoutMs });
  if (!found) return undefined;
  await recordEffectSuccess(deps.pool, effectKey, found.providerRequestId, found.providerId, found.response, fence);
  return found;
}
