import type { DegradationSetting } from '../store/degradation.js';
import type { Upstream } from '../store/effects.js';
import type { JobType } from '../contract/job-types.js';

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
