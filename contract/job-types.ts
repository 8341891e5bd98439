/**
 * The workflow-safe contract of every job: budgets, arguments, states. Pure types and
 * constants, imported by workflow code, activities, services and the store alike; it
 * imports nothing of ours. A job type's own facts live in its definition (`jobs/<type>/definition.ts`).
 *
 * Budgets, and why:
 * - `heartbeatTimeout` is the lease: a killed worker's activity moves to another worker
 *   after it, so it is seconds, not minutes.
 * - `startToCloseTimeout` bounds one attempt; each upstream call has its own, shorter
 *   timeout (`upstreamTimeoutMs`) so the call fails before the attempt does.
 * - `maximumAttempts` and `scheduleToCloseTimeout` are the attempt and elapsed caps.
 */
export type Priority = 'high' | 'normal' | 'low';
export const PRIORITIES = ['high', 'normal', 'low'] as const satisfies readonly Priority[];

/** A job type's name (`summarize`, `purchase`, or one of yours): the `type` of `POST /v1/jobs`. */
export type JobType = string;

export interface JobBudget {
  /** Lease. Default 10s. */
  heartbeatTimeoutMs: number;
  /** One attempt, including any wait for a concurrency slot. Default 5 min. */
  startToCloseTimeoutMs: number;
  /** Elapsed cap across all attempts. Default 10 min. */
  scheduleToCloseTimeoutMs: number;
  /** Attempt cap. Default 8. */
  maximumAttempts: number;
  /** Full-jitter base and cap for retries without Retry-After. Default 500 ms and 30 s. */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Timeout of one upstream HTTP call; shorter than startToClose. Default 15 s. */
  upstreamTimeoutMs: number;
}

/** Caps on concurrent upstream calls of one job type, per tenant and in total, across all workers. */
export interface ConcurrencyLimits {
  perTenant: number;
  global: number;
}

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

export const DEFAULT_CONCURRENCY: ConcurrencyLimits = { perTenant: 8, global: 32 };

/** Per job type overrides of the retry budget (config `JOB_BUDGETS`). */
export type JobBudgets = Partial<Record<JobType, Partial<JobBudget>>>;

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

/**
 * Set by `stepActivities` (workflows/step-activities.ts) on every step it schedules: the workflow,
 * not the activity, waits for a concurrency slot. An attempt that finds none ends at once (a
 * `SlotWait` failure, no retry attempt spent) and the workflow schedules the step again after a
 * durable timer. Absent (a workflow that calls `proxyActivities` itself, or one started before
 * this field existed): the attempt waits for its slot inside the activity, as it always did.
 */
export interface SlotWaitArgs {
  /** The step's attempts before this schedule: the job's attempt number is this plus Temporal's. */
  attemptOffset: number;
  /** This schedule follows a wait: its attempt leaves the job `queued` (with the reason) until it has its slot. */
  resumed: boolean;
  /**
   * The workflow reads a wait as the step's return value (`StepWait`), not as a failure, so
   * the Web UI and Temporal's metrics show no failed activity for a job that only waited.
   * Absent (a workflow from before this field): a wait is a `SlotWait` or `AdmissionWait` failure.
   */
  waitsReturn?: boolean;
}

/**
 * What a step returns instead of its result when its attempt must wait (`SlotWaitArgs.waitsReturn`):
 * `slot`, no concurrency slot was free (the job attempt that waited is `attempt`); `admission`, the
 * degradation gate did not admit the job at once (`StepArgs.admitInStep`). Nothing was sent,
 * no retry attempt spent; the workflow waits and schedules the step again.
 */
export interface StepWait {
  durableJobsWait: 'slot' | 'admission';
  message: string;
  attempt?: number;
}

/** The `StepWait` a step returned, or undefined for a step's own result. */
export function stepWaitOf(value: unknown): StepWait | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const kind = (value as Partial<StepWait>).durableJobsWait;
  return kind === 'slot' || kind === 'admission' ? (value as StepWait) : undefined;
}

/**
 * The Temporal failure type of an attempt that found no free concurrency slot (`SlotWaitArgs`),
 * for a workflow that does not read waits as return values (`SlotWaitArgs.waitsReturn`).
 */
export const SLOT_WAIT_FAILURE = 'SlotWait';

/** What a `SlotWait` failure carries: the job attempt that waited (the next schedule runs it again). */
export interface SlotWaitDetails {
  errorClass: 'slot_unavailable';
  attempt: number;
}

/**
 * The Temporal failure type of a first step that the degradation gate did not admit at once
 * (`StepArgs.admitInStep`), for a workflow that does not read waits as return values
 * (`SlotWaitArgs.waitsReturn`): nothing was written or called; the workflow runs the gate and
 * then schedules the step again.
 */
export const ADMISSION_WAIT_FAILURE = 'AdmissionWait';

/** What a step reports of its progress (`ctx.progress`, issue 38 §6). */
export interface ProgressReport {
  /** Units done so far: a finite number >= 0. */
  done: number;
  /** Units in all, when known: a finite number >= 0. */
  total?: number;
  /** A short word on what it is doing: at most 200 characters. Never secrets or raw user input: tenants see it. */
  note?: string;
}

/** What the job's row keeps (`job_intents.progress`): the latest report and the step that made it. */
export interface StoredProgress extends ProgressReport {
  step: string;
}

/** Which job's effects a step uses: replays of a job reuse the original job's effects. */
export type StepArgs = JobArgs & {
  effectScope?: string;
  slotWait?: SlotWaitArgs;
  /**
   * Set by `stepActivities` on the first step of a job whose lifecycle folds the degradation
   * gate into it (`runJob`'s `admitInFirstStep`): the attempt's first statement also asks the
   * gate's question (is this priority admitted at once?) and, if not, writes nothing and ends
   * with an `AdmissionWait` failure. Absent: the gate already ran in the workflow.
   */
  admitInStep?: boolean;
  /**
   * Set by `stepActivities` on every other step of a job whose lifecycle registered its gate
   * (`runJob`, patch `hold-at-next-step`, issue 38 §4): the attempt's first statement asks only
   * whether a pause (its priority, type, tenant, or the pair) holds the job now and, if so,
   * writes nothing and returns an `admission` wait; the workflow runs the gate (the job shows
   * `deferred` with the pause as its reason) and schedules the step again once resumed.
   */
  holdIfPaused?: boolean;
};

/**
 * `scheduled`: a delayed job (`runAt` / `delaySeconds`) before its time. Its row says `queued`
 * (column `run_at` holds the time); the API derives `scheduled` while the time is in the future
 * (services/job-status.ts `visibleState`), so nothing writes the change and `queued` keeps its
 * meaning: accepted and waiting for a worker.
 */
export const JOB_STATES = ['scheduled', 'queued', 'running', 'retrying', 'succeeded', 'dead_lettered', 'cancelled', 'deferred'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States a job never leaves. */
export const TERMINAL_STATES = ['succeeded', 'dead_lettered', 'cancelled'] as const satisfies readonly JobState[];
/** States of a job that has no result of its own yet. */
export const UNFINISHED_STATES = ['scheduled', 'queued', 'running', 'retrying', 'deferred'] as const satisfies readonly JobState[];

export function isTerminalState(s: string): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(s);
}
