import { describe, expect, it } from 'vitest';
import { summarize } from '../../jobs/summarize/definition.js';
import { SUBMIT_BODY_SCHEMA } from '../../services/intake.js';
import { problemFromError } from '../../server/problems.js';
import { IdempotencyConflictError, UnavailableError, ValidationError } from '../../lib/errors.js';

describe('input validation', () => {
  it('accepts a valid summarize input and refuses unknown fields', () => {
    expect(summarize.input.safeParse({ text: 'x' }).success).toBe(true);
    expect(summarize.input.safeParse({ text: 'x', other: 1 }).success).toBe(false);
  });
  it('bounds text to 1..100000 characters', () => {
    expect(summarize.input.safeParse({ text: '' }).success).toBe(false);
    expect(summarize.input.safeParse({ text: 'a'.repeat(100_000) }).success).toBe(true);
    expect(summarize.input.safeParse({ text: 'a'.repeat(100_001) }).success).toBe(false);
  });
  it('requires the body shape', () => {
    expect(SUBMIT_BODY_SCHEMA.safeParse({ type: 'summarize', input: {} }).success).toBe(true);
    expect(SUBMIT_BODY_SCHEMA.safeParse({ type: 'summarize', input: [] }).success).toBe(false);
    expect(SUBMIT_BODY_SCHEMA.safeParse({ type: 'summarize', input: {}, priority: 'urgent' }).success).toBe(false);
  });
});

describe('problems', () => {
  it('maps coded errors to RFC 9457 problems with stable types', () => {
    expect(problemFromError(new ValidationError('bad', [{ path: 'x', message: 'y' }]))).toMatchObject({
      status: 400,
      type: 'urn:durable-jobs:problem:validation-error',
      errors: [{ path: 'x' }],
    });
    expect(problemFromError(new IdempotencyConflictError('no'))).toMatchObject({ status: 422 });
    expect(problemFromError(new UnavailableError('down', 7, { dependency: 'postgres' }))).toMatchObject({
      status: 503,
      retryAfterSeconds: 7,
    });
    const internal = problemFromError(new Error('secret detail'));
    expect(internal).toMatchObject({ status: 500 });
    expect(JSON.stringify(internal)).not.toContain('secret detail');
  });
});
