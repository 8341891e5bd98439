import type pg from 'pg';
import { RetryableError } from '../lib/errors.js';
import type { Db } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import { getSetting, type DegradationSetting } from '../store/degradation.js';
import { setEffectUpstream, type Upstream } from '../store/effects.js';
import { setJobUpstream } from '../store/intents.js';
import type { JobType } from '../contract/job-types.js';
import type { Provider } from './provider.js';

/**
 * The fallback upstream: never a quiet switch. A step calls it only when its job type
 * declares a fallback AND an operator enabled it for that type (the audited degradation
 * setting), and only for an effect the primary cannot have applied. The choice is written
 * on the effect (before the call) and on the job (its status shows it).
 */
export interface FallbackPlan {
  /** The operator's decision for this job type, read at the start of the attempt. */
  enabled: boolean;
  /** Who enabled it and since when (shown on the job). */
  reason: string | null;
}

/**
 * The plan for a step of this job type, or undefined when the type declares no fallback
 * (its effects are then not labelled at all). One read of the one-row setting per attempt:
 * an operator's change applies to the next attempt.
 */
export async function fallbackPlan(pool: pg.Pool, jobType: JobType, declaresFallback: boolean): Promise<FallbackPlan | undefined> {
  if (!declaresFallback) return undefined;
  return planFrom(await getSetting(pool), jobType, true);
}

/** The plan from a setting the attempt already read (its first statement reads it: activities/job-steps.ts). */
export function planFrom(s: DegradationSetting, jobType: JobType, declaresFallback: boolean): FallbackPlan | undefined {
  if (!declaresFallback) return undefined;
  const since = s.fallbackSince[jobType];
  if (!s.fallbackJobTypes.includes(jobType) || !since) return { enabled: false, reason: null };
  // Tenants read this (`upstreamReason`): the operator's name stays in the audit trail and the console.
  return { enabled: true, reason: `the fallback upstream is enabled for ${jobType} by an operator since ${since.at}` };
}

export interface ClaimedEffect {
  inserted: boolean;
  was_in_doubt: boolean;
  upstream?: Upstream;
}

/**
 * Which upstream this attempt calls. An effect an earlier attempt may have applied (in doubt)
 * is reconciled where it was sent: re-sending it to the other provider could apply the same
 * business effect twice, under two providers that do not share idempotency keys. Only an
 * effect that is new, or that its upstream definitely refused (429, 4xx), follows the setting.
 */
export function chooseUpstream(
  row: ClaimedEffect,
  plan: FallbackPlan,
  fallbackConfigured: boolean,
): { upstream: Upstream; reason: string | null } {
  const prior = row.upstream ?? 'primary';
  if (!row.inserted && row.was_in_doubt) {
    if (prior === 'fallback')
      return { upstream: 'fallback', reason: 'an earlier call may have reached the fallback upstream: reconciling with it' };
    return {
      upstream: 'primary',
      reason: plan.enabled
        ? 'the fallback upstream is enabled, but an earlier call may have reached the primary: reconciling with the primary, never re-sending to the fallback'
        : null,
    };
  }
  if (!plan.enabled) return { upstream: 'primary', reason: null };
  if (!fallbackConfigured)
    return { upstream: 'primary', reason: `${plan.reason}, but this worker has no PROVIDER_FALLBACK_URL: staying on the primary` };
  return { upstream: 'fallback', reason: `sent to the fallback upstream: ${plan.reason}` };
}

export interface UpstreamDeps {
  pool: pg.Pool;
  provider: Provider;
  fallbackProvider?: Provider | undefined;
  log: Logger;
}

/**
 * Chooses the upstream, records the choice on the effect and the job (on `db`: the effect's
 * claim transaction, so the choice commits with the claim, before the call), and returns the
 * adapter to call.
 */
export async function upstreamFor(
  deps: UpstreamDeps,
  e: { effectKey: string; jobId: string; row: ClaimedEffect; plan: FallbackPlan },
  db: Db = deps.pool,
): Promise<Provider> {
  const choice = chooseUpstream(e.row, e.plan, deps.fallbackProvider !== undefined);
  const provider = choice.upstream === 'fallback' ? deps.fallbackProvider : deps.provider;
  if (!provider) {
    // In doubt at the fallback, on a worker without one: another worker (or this one, once
    // configured) must reconcile it there. Never the primary.
    throw new RetryableError('effect is in doubt at the fallback upstream and this worker has no PROVIDER_FALLBACK_URL', {
      errorClass: 'fallback_not_configured',
    });
  }
  await setEffectUpstream(db, e.effectKey, choice.upstream);
  await setJobUpstream(db, e.jobId, choice.upstream, choice.reason);
  if (choice.upstream === 'fallback')
    deps.log.warn({ jobId: e.jobId, effectKey: e.effectKey, reason: choice.reason }, 'calling the fallback upstream');
  return provider;
}
