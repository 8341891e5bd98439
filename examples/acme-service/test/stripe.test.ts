// How Stripe's errors map onto the retry classes (pure: the SDK's own error classes, no server).
import Stripe from 'stripe';
import { expect, it } from 'vitest';
import { NonRetryableError, RetryableError } from 'durable-jobs/jobs';
import { classifyStripeError } from '../src/upstreams/stripe.js';

const raw = (type: string, extra: Record<string, unknown> = {}) => ({ type, message: `${type} happened`, ...extra });

it('a declined card stops the job with Stripe code', () => {
  const err = classifyStripeError(
    new Stripe.errors.StripeCardError(raw('card_error', { code: 'card_declined', statusCode: 402 }) as never),
  );
  expect(err).toBeInstanceOf(NonRetryableError);
  expect(err.details).toMatchObject({ errorClass: 'payment_refused', providerCode: 'card_declined', statusCode: 402 });
});

it('an invalid request stops the job with its code, or its type when it has none', () => {
  const err = classifyStripeError(new Stripe.errors.StripeInvalidRequestError(raw('invalid_request_error', { statusCode: 400 }) as never));
  expect(err).toBeInstanceOf(NonRetryableError);
  expect(err.details).toMatchObject({ providerCode: 'invalid_request_error', statusCode: 400 });
});

it('5xx, 429 and connection errors retry, on Retry-After when Stripe sends one', () => {
  const busy = classifyStripeError(
    new Stripe.errors.StripeAPIError(raw('api_error', { statusCode: 503, headers: { 'retry-after': '7' } }) as never),
  );
  expect(busy).toBeInstanceOf(RetryableError);
  expect(busy.details).toMatchObject({ statusCode: 503, retryAfterMs: 7_000 });
  expect(classifyStripeError(new Stripe.errors.StripeRateLimitError(raw('rate_limit_error', { statusCode: 429 }) as never))).toBeInstanceOf(
    RetryableError,
  );
  const lost = classifyStripeError(new Stripe.errors.StripeConnectionError(raw('api_connection_error') as never));
  expect(lost).toBeInstanceOf(RetryableError);
  expect(lost.details.statusCode).toBeUndefined(); // in doubt: re-sent with the same key
});
