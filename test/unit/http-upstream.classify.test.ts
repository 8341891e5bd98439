import { describe, expect, it } from 'vitest';
import { httpFailure, providerCodeOf } from '../../activities/http-upstream.js';
import { classify, stamp } from '../../activities/upstream-call.js';
import { credential, readCredentials } from '../../lib/credentials.js';
import { NonRetryableError, RetryableError } from '../../lib/errors.js';

const answer = (status: number, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers: new Headers(headers),
});
const keyed = { path: '/v1/charges', keySent: true, nowMs: 0 };

describe("httpUpstream's classification", () => {
  it('a 429 retries after Retry-After and keeps the provider code; the effect was not applied (status below 500)', () => {
    const e = httpFailure(answer(429, { error: { code: 'rate_limit' } }, { 'retry-after': '3', 'x-request-id': 'req_9' }), keyed);
    expect(e).toBeInstanceOf(RetryableError);
    expect(e.details).toMatchObject({ statusCode: 429, errorClass: 'rate_limited', retryAfterMs: 3000, providerCode: 'rate_limit' });
    expect(e.message).toBe('upstream answered 429 on /v1/charges (request req_9)');
  });

  it('a 5xx retries (in doubt), a 409 to a keyed request is a key still in progress', () => {
    expect(httpFailure(answer(503), keyed)).toBeInstanceOf(RetryableError);
    expect(httpFailure(answer(409), keyed).details.errorClass).toBe('request_in_progress');
    expect(httpFailure(answer(409), { ...keyed, keySent: false })).toBeInstanceOf(NonRetryableError);
  });

  it("a 4xx is non-retryable with the provider's own code from the body", () => {
    const e = httpFailure(answer(402, { error: { code: 'card_declined', type: 'card_error' } }), keyed);
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.details).toEqual({ statusCode: 402, errorClass: 'http_402', providerCode: 'card_declined' });
    expect(providerCodeOf({ error: 'injected_fault' })).toBe('injected_fault');
    expect(providerCodeOf({ code: 'bad key with spaces' })).toBeUndefined();
    expect(providerCodeOf({})).toBeUndefined();
  });
});

describe('a declared upstream classifying what its client threw', () => {
  const up = {
    name: 'mailer',
    classify: (err: unknown) => new NonRetryableError(String(err), { errorClass: 'refused', providerCode: 'E550' }),
  };

  it('keeps an error the call already classified, and names the upstream on the failure', () => {
    const mine = new RetryableError('busy', { errorClass: 'rate_limited', statusCode: 429 });
    expect(classify(up, mine)).toBe(mine);
    expect(stamp(classify(up, new Error('550 no such user')), up.name).details).toEqual({
      errorClass: 'refused',
      providerCode: 'E550',
      upstream: 'mailer',
    });
  });

  it('a classifier that throws or returns nothing leaves the effect in doubt: retryable, no status', () => {
    const e = classify({ name: 'x', classify: () => undefined as never }, new Error('boom'));
    expect(e).toBeInstanceOf(RetryableError);
    expect(e.details).toEqual({ errorClass: 'unclassified' });
    expect(
      classify(
        {
          name: 'x',
          classify: () => {
            throw new Error('bug');
          },
        },
        'e',
      ).details.errorClass,
    ).toBe('unclassified');
  });

  it('takes a credential value out of the message', () => {
    const c = credential('UNIT_TEST_MAILER_KEY');
    readCredentials([c], { UNIT_TEST_MAILER_KEY: 'sk_unit_1234567890' });
    const e = stamp(new NonRetryableError('invalid key sk_unit_1234567890', { errorClass: 'permission_denied' }), 'mailer');
    expect(e.message).toBe('invalid key [credential UNIT_TEST_MAILER_KEY]');
    expect(JSON.stringify({ c })).toBe('{"c":"[credential UNIT_TEST_MAILER_KEY]"}');
    expect(() => readCredentials([credential('UNIT_TEST_ABSENT')], {})).toThrow(
      'credential UNIT_TEST_ABSENT is not set: set UNIT_TEST_ABSENT, or UNIT_TEST_ABSENT_FILE to a file that holds it',
    );
  });
});
