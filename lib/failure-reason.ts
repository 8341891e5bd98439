/**
 * The words a dead-lettered job's `statusReason` (and its dead letter's `recorded` action)
 * gives for why it stopped. Temporal's retry state alone misleads: a non-retryable failure
 * on the first attempt once read "invalid_request after retries (NON_RETRYABLE_FAILURE)",
 * although nothing was retried. So the words come from the retry state *and* the attempt
 * that failed last; the retry state stays in parentheses as the code to search for.
 */
export function deadLetterReason(f: {
  errorClass: string;
  /** Temporal's `RetryState` name (`NON_RETRYABLE_FAILURE`, ...), or undefined when unknown. */
  retryState?: string | null;
  /**
   * The failure's type. `RetryBudgetExhausted` is non-retryable for Temporal but means the
   * step's own budget (attempt cap or elapsed time) was spent: retried, then stopped.
   */
  errorType?: string | null;
  /** The attempt number of the step attempt that failed last (1 = the first). */
  attempt: number;
}): string {
  const state = (f.retryState ?? '').replace(/^RETRY_STATE_/, '');
  const n = Math.max(1, f.attempt);
  const code = state ? ` (${state})` : '';
  if (f.errorType === 'RetryBudgetExhausted') {
    return n === 1
      ? `${f.errorClass} on the first attempt, the retry budget spent (RetryBudgetExhausted)`
      : `${f.errorClass} after ${n} attempts, the retry budget spent (RetryBudgetExhausted)`;
  }
  switch (state) {
    case 'NON_RETRYABLE_FAILURE':
      return n === 1
        ? `${f.errorClass} on the first attempt, not retried${code}`
        : `${f.errorClass} on attempt ${n}, not retried further${code}`;
    case 'MAXIMUM_ATTEMPTS_REACHED':
      return `${f.errorClass} after ${n} attempts, the attempt cap${code}`;
    case 'TIMEOUT':
      return `${f.errorClass} after ${n} attempt${n === 1 ? '' : 's'}, the elapsed cap reached${code}`;
    default:
      return `${f.errorClass} on attempt ${n}${code}`;
  }
}

/** Whether Temporal stopped because the failure was non-retryable (not because a cap was reached). */
export function isNonRetryable(retryState: string | null | undefined): boolean {
  return (retryState ?? '').replace(/^RETRY_STATE_/, '') === 'NON_RETRYABLE_FAILURE';
}
