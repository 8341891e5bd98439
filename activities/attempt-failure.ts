/**
 * The one retry layer's verdict on a failed attempt (activities/step-attempt.ts `fail` writes it):
 * pure, so its rules are unit-tested without Temporal or Postgres.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { isConnectionError } from '../lib/db.js';
import { DurableJobsError, NonRetryableError, RetryableError, type UpstreamErrorDetails } from '../lib/errors.js';
import { attemptMarginMs, chooseDelay, exceedsBudget } from '../lib/retry.js';
import type { AttemptRecord } from '../store/attempts.js';
import type { JobBudget } from '../contract/job-types.js';

/** Delay after an attempt failed because our own Postgres was unreachable. */
const DATABASE_RETRY_MS = 5_000;

export interface FailureDetails {
  errorClass: string;
  statusCode?: number;
  delayMs?: number;
  budgetExhausted?: boolean;
}

/** Where the attempt stands when it failed. */
export interface FailureFacts {
  jobId: string;
  step: string;
  budget: JobBudget;
  startedAt: Date;
  /** The job's attempt (the schedule's plus the step's attempts before it). */
  attempt: number;
  /** The schedule's attempt, which the retry policy's cap counts. */
  raw: number;
  maximumAttempts?: number | undefined;
  /** The schedule-to-close deadline (epoch ms), if any. */
  deadlineMs?: number | undefined;
  now: number;
}

export type FailureVerdict =
  | {
      kind: 'retry';
      record: AttemptRecord;
      error: { errorClass: string; message: string; statusCode?: number };
      nextAttemptAt: Date;
      delayMs: number;
      failure: ApplicationFailure;
    }
  | { kind: 'stop'; record: AttemptRecord; why: string; failure: ApplicationFailure };

/**
 * Turns an error into the failure Temporal acts on, with the attempt's row. The delay is chosen
 * here: `Retry-After` when the upstream gave one, else full jitter; and if that delay would
 * overrun the elapsed budget (or this is the last attempt), the attempt stops now as
 * non-retryable (`RetryBudgetExhausted`) instead of sleeping into the cap.
 */
export function decideFailure(err: unknown, f: FailureFacts): FailureVerdict {
  const base = { jobId: f.jobId, step: f.step, attempt: f.attempt, startedAt: f.startedAt };
  if (err instanceof RetryableError || !(err instanceof DurableJobsError)) {
    const retryable = asRetryable(err);
    const { delayMs, source } = chooseDelay(f.attempt, retryable.details.retryAfterMs, {
      baseMs: f.budget.backoffBaseMs,
      capMs: f.budget.backoffCapMs,
    });
    const d = retryable.details;
    const details: FailureDetails = { errorClass: d.errorClass, statusCode: d.statusCode, delayMs };
    const said = upstreamSaid(d);
    const lastAttempt = f.maximumAttempts ? f.raw >= f.maximumAttempts : false;
    if (lastAttempt || exceedsBudget(f.now, delayMs, f.deadlineMs, attemptMarginMs(f.now - f.startedAt.getTime()))) {
      details.budgetExhausted = true;
      const why = lastAttempt
        ? `attempt cap of ${(f.maximumAttempts ?? 0) + f.attempt - f.raw} reached`
        : `next delay ${delayMs} ms would pass the elapsed budget`;
      return {
        kind: 'stop',
        record: { ...base, outcome: 'non_retryable', errorClass: d.errorClass, statusCode: d.statusCode, ...said },
        why: `retry budget exhausted: ${why}`,
        failure: ApplicationFailure.create({
          message: `${retryable.message}; ${why}`,
          type: 'RetryBudgetExhausted',
          nonRetryable: true,
          details: [details],
        }),
      };
    }
    return {
      kind: 'retry',
      record: { ...base, outcome: 'retryable', errorClass: d.errorClass, statusCode: d.statusCode, delayMs, delaySource: source, ...said },
      error: { errorClass: d.errorClass, message: retryable.message, statusCode: d.statusCode },
      nextAttemptAt: new Date(f.now + delayMs),
      delayMs,
      failure: ApplicationFailure.create({
        message: retryable.message,
        type: 'RetryableError',
        nonRetryable: false,
        nextRetryDelay: delayMs,
        details: [details],
      }),
    };
  }
  return permanent(err, base);
}

/** A permanent failure (validation, a refusal the upstream will always give): its row, and a non-retryable failure of its class. */
function permanent(err: DurableJobsError, base: Pick<AttemptRecord, 'jobId' | 'step' | 'attempt' | 'startedAt'>): FailureVerdict {
  const errorClass = err instanceof NonRetryableError ? err.details.errorClass : err.code;
  const statusCode = err instanceof NonRetryableError ? err.details.statusCode : undefined;
  return {
    kind: 'stop',
    record: {
      ...base,
      outcome: 'non_retryable',
      errorClass,
      statusCode,
      ...(err instanceof NonRetryableError ? upstreamSaid(err.details) : {}),
    },
    why: 'attempt failed permanently',
    failure: ApplicationFailure.create({
      message: err.message,
      type: err.name,
      nonRetryable: true,
      details: [{ errorClass, statusCode } satisfies FailureDetails],
    }),
  };
}

/** Our own Postgres unreachable mid-attempt: retry, but not in a burst that spends the attempt cap before a restart finishes. */
function asRetryable(err: unknown): RetryableError {
  if (err instanceof RetryableError) return err;
  if (isConnectionError(err))
    return new RetryableError(
      (err as Error).message,
      { errorClass: 'database_unavailable', retryAfterMs: DATABASE_RETRY_MS },
      { cause: err },
    );
  return new RetryableError((err as Error)?.message ?? String(err), { errorClass: 'internal_error' }, { cause: err });
}

/** The upstream and its own code, for the attempt's row; neither goes into the Temporal failure (the row is the evidence). */
function upstreamSaid(d: UpstreamErrorDetails): UpstreamErrorDetails {
  return {
    ...(d.upstream ? { upstream: d.upstream } : {}),
    ...(d.providerCode ? { providerCode: d.providerCode } : {}),
  };
}
