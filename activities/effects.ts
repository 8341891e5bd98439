/**
 * One external effect outside a job step (the outbox's notifications): the same ledger, the
 * same guarantees, through the step attempt's own transitions (activities/step-attempt.ts
 * `effect`: claim, reuse or look up or call, record).
 */
import type pg from 'pg';
import type { Logger } from '../lib/logger.js';
import type { ConcurrencyLimits } from '../contract/job-types.js';
import { attemptDeps } from './attempt.js';
import type { FallbackPlan } from './fallback.js';
import type { Provider } from './provider.js';
import { StepAttempt } from './step-attempt.js';
import type { EffectRequest, EffectResult } from './upstream-call.js';

export type { EffectRequest, EffectResult } from './upstream-call.js';

export interface EffectDeps {
  pool: pg.Pool;
  provider?: Provider | undefined;
  log: Logger;
  fallbackProvider?: Provider | undefined;
}

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
  /** Set when the job type declares a fallback upstream: the operator's decision for it (activities/fallback.ts). */
  fallback?: FallbackPlan | undefined;
  /**
   * The concurrency caps the call is held to (a slot held for the call only, freed on every
   * path), with the job type they count against. Default: none.
   */
  slots?: { jobType: string; limits: ConcurrencyLimits; total?: number | undefined } | undefined;
};

/**
 * The crash-safe order for one external effect:
 * 1. claim the effect row (unique on the effect key);
 * 2. if a previous attempt already stored a success, reuse it without calling;
 * 3. if a previous attempt left it in doubt, look it up by key (or re-send with the same key,
 *    or stop for an operator: the upstream's semantics) and count a reconciliation;
 * 4. store the provider's IDs as soon as the response arrives, before anything else.
 */
export async function runEffect(deps: EffectDeps, s: EffectSpec): Promise<EffectResult> {
  const { effectScope, jobId, tenantId, step, timeoutMs, startedAt, effectKey, fallback, slots, ...request } = s;
  const attempt = new StepAttempt(attemptDeps(deps), {
    args: { jobId, tenantId, effectScope, jobType: slots?.jobType },
    step,
    startedAt,
    slots,
  });
  return attempt.effect({ ...(request as EffectRequest), step, timeoutMs, effectKey, fallback });
}
