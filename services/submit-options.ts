/**
 * A submit's terms besides its type and input: when it runs (`runAt` or `delaySeconds`) and the
 * business tags its submitter files it under. One schema for the HTTP body and the typed client.
 */
import { z } from 'zod';
import { ValidationError } from '../lib/errors.js';

/** The furthest a job may be delayed: 365 days. */
export const MAX_DELAY_SECONDS = 365 * 24 * 3600;
/** At most this many tags per job. */
export const MAX_TAGS = 10;
export const TAG_KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** 1-200 characters, none a control character or a lone surrogate (Postgres cannot store those in jsonb). */
export const TAG_VALUE_PATTERN = /^[^\p{Cc}\p{Cs}]{1,200}$/u;

const TAG_KEY_RULE = '1-64 characters: letters, digits, "_", "." or "-"';
const TAG_VALUE_RULE = '1-200 characters, no control characters';

export const TAG_KEY_SCHEMA = z.string().regex(TAG_KEY_PATTERN, `a tag key is ${TAG_KEY_RULE}`);
export const TAG_VALUE_SCHEMA = z.string().regex(TAG_VALUE_PATTERN, `a tag value is ${TAG_VALUE_RULE}`);

export const TAGS_SCHEMA = z
  .record(TAG_KEY_SCHEMA, TAG_VALUE_SCHEMA, {
    error: `an object of at most ${MAX_TAGS} tags, each key ${TAG_KEY_RULE}, each value a string`,
  })
  .refine((t) => Object.keys(t).length <= MAX_TAGS, `at most ${MAX_TAGS} tags`);

/** The optional fields of `POST /v1/jobs` that are not the input (merged into `SUBMIT_BODY_SCHEMA`). */
export const SUBMIT_TERMS_SHAPE = {
  runAt: z.iso
    .datetime({ offset: true, error: 'an ISO 8601 date-time with a zone, e.g. 2030-01-01T09:00:00Z' })
    .optional()
    .describe('when the job may start (at most 365 days ahead); a time already past starts it at once. Not with delaySeconds'),
  delaySeconds: z
    .number({ error: `a whole number of seconds, 0-${MAX_DELAY_SECONDS}` })
    .int(`a whole number of seconds, 0-${MAX_DELAY_SECONDS}`)
    .min(0, `a whole number of seconds, 0-${MAX_DELAY_SECONDS}`)
    .max(MAX_DELAY_SECONDS, `at most ${MAX_DELAY_SECONDS} (365 days)`)
    .optional()
    .describe('start the job this many seconds after it is accepted. Not with runAt'),
  tags: TAGS_SCHEMA.optional().describe(`business tags to find the job by (GET /v1/jobs?tag=key:value), at most ${MAX_TAGS}`),
};

export interface SubmitTerms {
  runAt?: string | Date;
  delaySeconds?: number;
  tags?: Record<string, string>;
}

export interface ResolvedTerms {
  /** When the job may start; null: at once (no delay asked, or `runAt` already past). */
  runAt: Date | null;
  tags: Record<string, string> | null;
  /** The terms as the client sent them, for the input hash: a retry of a `delaySeconds` submit is the same intent later. */
  hashed: { runAt?: string; delaySeconds?: number; tags?: Record<string, string> };
}

const TERMS_SCHEMA = z.object(SUBMIT_TERMS_SHAPE);

/**
 * Validates the terms and resolves the start time against `now`. A `runAt` in the past starts
 * the job at once rather than failing: a client retrying a submit whose time has passed must
 * still get its replay, not a 400. Both `runAt` and `delaySeconds`, or a `runAt` more than 365
 * days ahead, is a 400 naming the field.
 */
export function resolveTerms(t: SubmitTerms, now: Date): ResolvedTerms {
  const runAtText = t.runAt instanceof Date ? (Number.isNaN(t.runAt.getTime()) ? 'Invalid Date' : t.runAt.toISOString()) : t.runAt;
  const parsed = TERMS_SCHEMA.safeParse({ runAt: runAtText, delaySeconds: t.delaySeconds, tags: t.tags });
  if (!parsed.success) {
    throw new ValidationError(
      'invalid runAt, delaySeconds or tags',
      parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
    );
  }
  const { runAt, delaySeconds, tags } = parsed.data;
  if (runAt !== undefined && delaySeconds !== undefined) {
    throw new ValidationError('give runAt or delaySeconds, not both', [
      { path: 'runAt', message: 'not with delaySeconds' },
      { path: 'delaySeconds', message: 'not with runAt' },
    ]);
  }
  let at: Date | null = null;
  const hashed: ResolvedTerms['hashed'] = {};
  if (runAt !== undefined) {
    at = new Date(runAt);
    if (at.getTime() - now.getTime() > MAX_DELAY_SECONDS * 1000) {
      throw new ValidationError('runAt is too far ahead', [{ path: 'runAt', message: 'at most 365 days ahead' }]);
    }
    // Normalized, so 09:00+02:00 and 07:00Z are the same intent.
    hashed.runAt = at.toISOString();
    if (at.getTime() <= now.getTime()) at = null;
  }
  if (delaySeconds !== undefined) {
    hashed.delaySeconds = delaySeconds;
    at = delaySeconds > 0 ? new Date(now.getTime() + delaySeconds * 1000) : null;
  }
  if (tags !== undefined && Object.keys(tags).length > 0) hashed.tags = tags;
  return { runAt: at, tags: hashed.tags ?? null, hashed };
}
