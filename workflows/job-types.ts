/**
 * Per job type: its workflow type and its budgets. Pure constants, shared by workflow code
 * (timeouts, retry caps) and by intake (which workflow to start).
 *
 * Budgets, and why:
 * - `heartbeatTimeout` is the lease: a killed worker's activity moves to another worker
 *   after it, so it is seconds, not minutes.
 * - `startToCloseTimeout` bounds one attempt; each upstream call has its own, shorter
 *   timeout (`upstreamTimeoutMs`) so the call fails before the attempt does.
 * - `maximumAttempts` and `scheduleToCloseTimeout` are the attempt and elapsed caps.
 */
export type Priority = 'high' | 'normal' | 'low';

export interface JobBudget {
  /** Lease. Default 10s. */
  heartbeatTimeoutMs: number;
  /** One attempt, including any wait for a concurrency slot. Default 5 min. */
  startToCloseTimeoutMs: number;
  /** Elapsed cap across all attempts. Default 10 min. */
  scheduleToCloseTimeoutMs: number;
  /** Attempt cap. Default 8. */
  maximumAttempts: number;
  /** Full-jitter base and cap for retries without Retry-After. */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Timeout of one upstream HTTP call; shorter than startToClose. */
  upstreamTimeoutMs: number;
}

/** Caps on concurrent upstream calls of one job type, per tenant and in total, across all workers. */
export interface ConcurrencyLimits { perTenant: number; global: number }

export const DEFAULT_BUDGET: JobBudget = {
  heartbeatTimeoutMs: 10_000,
  // Longer than one call needs: an attempt may first wait for a concurrency slot. A crashed
  // worker is still detected within heartbeatTimeout; this only bounds a live, stuck one.
  startToCloseTimeoutMs: 5 * 60_000,
  scheduleToCloseTimeoutMs: 10 * 60_000,
  maximumAttempts: 8,
  backoffBaseMs: 500,
  backoffCapMs: 30_000,
  upstreamTimeoutMs: 15_000,
};

export interface JobTypeInfo {
  workflowType: string;
  /** One line for the Web UI. */
  description: string;
  budget: JobBudget;
  concurrency: ConcurrencyLimits;
  /**
   * Whether a status read may ask for the last successful result of the same tenant, type
   * and input while this job has not succeeded (`?allowStale=true`). It is always labelled
   * stale with its time, never put in `result`. Only for results that are still useful late.
   */
  staleResultAllowed?: boolean;
  /**
   * The type may use the fallback upstream (`PROVIDER_FALLBACK_URL`), but only while an
   * operator has enabled it for this type (`PUT /v1/admin/degradation`); never on its own.
   * Only for effects whose business result does not depend on which provider made it.
   */
  fallback?: { allowed: true };
  /**
   * What the upstream does with a request whose effect is in doubt (an earlier attempt may
   * have reached it unseen). `idempotentByKey`: a re-send with the same Idempotency-Key is
   * answered with the first response, never applied twice; if false, an in-doubt effect is
   * never re-sent blind (without `lookupByKey` it stops for an operator, `effect_in_doubt`).
   * `lookupByKey`: the upstream answers `GET /v1/idempotency/{key}`; the next attempt asks it
   * first and records a completed effect without calling again. Default: idempotent by key,
   * no lookup.
   */
  upstream?: { idempotentByKey: boolean; lookupByKey?: boolean };
}

export const DEFAULT_CONCURRENCY: ConcurrencyLimits = { perTenant: 8, global: 32 };

export const JOB_TYPES = {
  summarize: {
    workflowType: 'summarizeJob',
    description: 'summarize a text with the provider, then notify by e-mail (optional)',
    budget: DEFAULT_BUDGET,
    concurrency: DEFAULT_CONCURRENCY,
    staleResultAllowed: true,
    fallback: { allowed: true },
  },
  purchase: {
    workflowType: 'purchaseJob',
    description: 'charge a customer, then send the receipt: two effects in sequence',
    budget: DEFAULT_BUDGET,
    concurrency: DEFAULT_CONCURRENCY,
    // A charge in doubt is looked up before anything is sent again.
    upstream: { idempotentByKey: true, lookupByKey: true },
  },
  transcribe: {
    workflowType: 'transcribeJob',
    description: "start a transcription, then complete on the provider's webhook (or by polling)",
    budget: DEFAULT_BUDGET,
    concurrency: DEFAULT_CONCURRENCY,
  },
  digest: {
    workflowType: 'digestJob',
    description: 'scheduled: one per tenant and window, a digest of the previous window sent as one notification',
    budget: DEFAULT_BUDGET,
    concurrency: DEFAULT_CONCURRENCY,
  },
} as const satisfies Record<string, JobTypeInfo>;

export type JobType = keyof typeof JOB_TYPES;

export function isJobType(t: string): t is JobType {
  return Object.prototype.hasOwnProperty.call(JOB_TYPES, t);
}

/** What every job workflow receives: references only, never the input itself. */
export interface JobArgs {
  jobId: string;
  tenantId: string;
  jobType: JobType;
  priority: Priority;
  /**
   * Overrides of the type's budget, resolved at intake from configuration (`JOB_BUDGETS`).
   * Carried in the workflow's arguments so a running job keeps the budget it started with.
   */
  budget?: Partial<JobBudget>;
}

/** Whether the type declares `staleResultAllowed`. */
export function allowsStaleResult(t: JobType): boolean {
  return (JOB_TYPES[t] as JobTypeInfo).staleResultAllowed === true;
}

/** Job types that declare a fallback upstream: the only ones an operator may switch to it. */
export const FALLBACK_JOB_TYPES = (Object.keys(JOB_TYPES) as JobType[]).filter((t) => (JOB_TYPES[t] as JobTypeInfo).fallback?.allowed === true);

/** The type's upstream idempotency declaration (default: idempotent by key, no lookup). */
export function upstreamFor(t: JobType): { idempotentByKey: boolean; lookupByKey: boolean } {
  const u = (JOB_TYPES[t] as JobTypeInfo).upstream;
  return { idempotentByKey: u?.idempotentByKey ?? true, lookupByKey: u?.lookupByKey ?? false };
}

export function budgetFor(args: Pick<JobArgs, 'jobType' | 'budget'>): JobBudget {
  return { ...JOB_TYPES[args.jobType].budget, ...args.budget };
}

export const JOB_STATES = ['queued', 'running', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'deferred'] as const;
export type JobState = (typeof JOB_STATES)[number];
