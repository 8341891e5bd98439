// Stripe, through its official SDK: idempotent by key (Stripe's `Idempotency-Key` is the effect
// key), the SDK's own retries off (Temporal is the only retry layer), and Stripe's errors mapped
// onto the two retry classes with Stripe's own codes.
import Stripe from 'stripe';
import { credential, defineUpstream, NonRetryableError, parseRetryAfter, RetryableError, type EffectCall } from 'durable-jobs/jobs';

/** Read once when a worker starts (STRIPE_SECRET_KEY, or the file STRIPE_SECRET_KEY_FILE names). */
const secretKey = credential('STRIPE_SECRET_KEY');

/**
 * Declined, invalid or forbidden: never retried, with Stripe's `code` (`card_declined`, ...) or,
 * when the answer has none, its error type. 429, 409 (a concurrent request with the same key),
 * 5xx and connection errors retry, on `Retry-After` when Stripe sends one.
 */
export function classifyStripeError(raw: unknown): RetryableError | NonRetryableError {
  if (!(raw instanceof Stripe.errors.StripeError))
    return new RetryableError(String((raw as Error)?.message ?? raw), { errorClass: 'unclassified' });
  const status = raw.statusCode;
  if (raw instanceof Stripe.errors.StripeCardError)
    return new NonRetryableError(raw.message, {
      errorClass: 'payment_refused',
      statusCode: status ?? 402,
      providerCode: raw.code ?? 'card_error',
    });
  if (status === undefined || status === 409 || status === 429 || status >= 500)
    return new RetryableError(raw.message, {
      errorClass: 'upstream_unavailable',
      // Without a status (a connection error) the charge is in doubt: the next attempt re-sends it with the same key.
      ...(status === undefined ? {} : { statusCode: status }),
      retryAfterMs: parseRetryAfter(raw.headers?.['retry-after'], Date.now()),
      ...(raw.code ? { providerCode: raw.code } : {}),
    });
  return new NonRetryableError(raw.message, {
    errorClass: 'request_refused',
    statusCode: status,
    providerCode: raw.code ?? raw.rawType ?? 'stripe_error',
  });
}

export const stripe = defineUpstream({
  name: 'stripe',
  semantics: 'idempotentByKey',
  credentials: [secretKey],
  classify: classifyStripeError,
});

let client: Stripe | undefined;

/** One client per worker process. `STRIPE_API_BASE` points it elsewhere (stripe-mock in the tests). */
function stripeClient(): Stripe {
  if (client) return client;
  const base = process.env.STRIPE_API_BASE ? new URL(process.env.STRIPE_API_BASE) : undefined;
  client = new Stripe(secretKey.value(), {
    maxNetworkRetries: 0,
    ...(base ? { host: base.hostname, port: Number(base.port), protocol: base.protocol === 'http:' ? 'http' : 'https' } : {}),
  });
  return client;
}

export interface PaymentIntentAnswer {
  id: string;
  status: string;
  amount: number;
  currency: string;
}

/** The call of a `charge` effect: one PaymentIntent, keyed by the effect key. */
export function createPaymentIntent(params: Stripe.PaymentIntentCreateParams): EffectCall<PaymentIntentAnswer> {
  return async ({ effectKey, timeoutMs }) => {
    const pi = await stripeClient().paymentIntents.create(params, { idempotencyKey: effectKey, timeout: timeoutMs });
    return {
      response: { id: pi.id, status: pi.status, amount: pi.amount, currency: pi.currency },
      providerId: pi.id,
      providerRequestId: pi.lastResponse.requestId,
      status: pi.lastResponse.statusCode,
    };
  };
}
