import { describe, expect, it } from 'vitest';
import { deadLetterReason } from '../../lib/failure-reason.js';

describe("a dead-lettered job's statusReason", () => {
  it('a non-retryable failure on the first attempt says "not retried", never "after retries"', () => {
    const r = deadLetterReason({ errorClass: 'invalid_request', retryState: 'NON_RETRYABLE_FAILURE', attempt: 1 });
    expect(r).toBe('invalid_request on the first attempt, not retried (NON_RETRYABLE_FAILURE)');
    expect(r).not.toMatch(/after retries/);
    expect(deadLetterReason({ errorClass: 'invalid_request', retryState: 'RETRY_STATE_NON_RETRYABLE_FAILURE', attempt: 3 })).toBe(
      'invalid_request on attempt 3, not retried further (NON_RETRYABLE_FAILURE)',
    );
  });

  it('names the cap that stopped the retries, and the attempts it took', () => {
    expect(
      deadLetterReason({
        errorClass: 'upstream_unavailable',
        retryState: 'NON_RETRYABLE_FAILURE',
        errorType: 'RetryBudgetExhausted',
        attempt: 8,
      }),
    ).toBe('upstream_unavailable after 8 attempts, the retry budget spent (RetryBudgetExhausted)');
    expect(deadLetterReason({ errorClass: 'upstream_unavailable', retryState: 'MAXIMUM_ATTEMPTS_REACHED', attempt: 5 })).toBe(
      'upstream_unavailable after 5 attempts, the attempt cap (MAXIMUM_ATTEMPTS_REACHED)',
    );
    expect(deadLetterReason({ errorClass: 'upstream_timeout', retryState: 'TIMEOUT', attempt: 1 })).toBe(
      'upstream_timeout after 1 attempt, the elapsed cap reached (TIMEOUT)',
    );
    expect(deadLetterReason({ errorClass: 'x', retryState: null, attempt: 0 })).toBe('x on attempt 1');
  });
});
