import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/errors.js';
import { unkeyed } from '../../lib/ids.js';
import { decodeCursor, encodeCursor, parseListQuery, TENANT_LIST_QUERY } from '../../services/job-lists.js';
import { visibleState } from '../../services/job-status.js';
import { MAX_DELAY_SECONDS, resolveTerms } from '../../services/submit-options.js';

const now = new Date('2030-06-01T12:00:00.000Z');
const fields = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err.fields.map((f) => f.path);
    throw err;
  }
  return [];
};

describe('a submit with runAt, delaySeconds or tags', () => {
  it('resolves the start time: runAt as given, delaySeconds from now, a past runAt or 0 s at once', () => {
    expect(resolveTerms({ runAt: '2030-06-01T15:00:00+02:00' }, now)).toEqual({
      runAt: new Date('2030-06-01T13:00:00.000Z'),
      tags: null,
      hashed: { runAt: '2030-06-01T13:00:00.000Z' },
    });
    expect(resolveTerms({ runAt: new Date('2030-06-01T13:00:00Z') }, now).hashed).toEqual({ runAt: '2030-06-01T13:00:00.000Z' });
    // Exactly now, or past: at once; the hash still says what was asked.
    expect(resolveTerms({ runAt: '2030-06-01T14:00:00+02:00' }, now)).toMatchObject({
      runAt: null,
      hashed: { runAt: '2030-06-01T12:00:00.000Z' },
    });
    expect(resolveTerms({ runAt: '2030-05-01T00:00:00Z' }, now)).toMatchObject({
      runAt: null,
      hashed: { runAt: '2030-05-01T00:00:00.000Z' },
    });
    expect(resolveTerms({ delaySeconds: 90 }, now)).toMatchObject({
      runAt: new Date('2030-06-01T12:01:30Z'),
      hashed: { delaySeconds: 90 },
    });
    expect(resolveTerms({ delaySeconds: 0 }, now)).toMatchObject({ runAt: null, hashed: { delaySeconds: 0 } });
    expect(resolveTerms({}, now)).toEqual({ runAt: null, tags: null, hashed: {} });
    expect(resolveTerms({ tags: {} }, now)).toEqual({ runAt: null, tags: null, hashed: {} });
    expect(resolveTerms({ delaySeconds: MAX_DELAY_SECONDS }, now).runAt).toEqual(new Date(now.getTime() + MAX_DELAY_SECONDS * 1000));
  });

  it('names each bad term', () => {
    expect(fields(() => resolveTerms({ runAt: '2030-06-02T00:00:00Z', delaySeconds: 1 }, now))).toEqual(['runAt', 'delaySeconds']);
    expect(fields(() => resolveTerms({ delaySeconds: MAX_DELAY_SECONDS + 1 }, now))).toEqual(['delaySeconds']);
    expect(fields(() => resolveTerms({ delaySeconds: -5 }, now))).toEqual(['delaySeconds']);
    expect(fields(() => resolveTerms({ runAt: '2031-06-02T12:00:00Z' }, now))).toEqual(['runAt']);
    expect(fields(() => resolveTerms({ runAt: new Date('nope') }, now))).toEqual(['runAt']);
    expect(fields(() => resolveTerms({ tags: { 'a/b': 'x' } }, now))).toEqual(['tags.a/b']);
    expect(fields(() => resolveTerms({ tags: { k: 'line\nbreak' } }, now))).toEqual(['tags.k']);
    expect(fields(() => resolveTerms({ tags: { k: 'x'.repeat(201) } }, now))).toEqual(['tags.k']);
    expect(fields(() => resolveTerms({ tags: Object.fromEntries([...'abcdefghijk'].map((k) => [k, 'v'])) }, now))).toEqual(['tags']);
    expect(resolveTerms({ tags: { 'order.id': 'Zürich 42' } }, now).tags).toEqual({ 'order.id': 'Zürich 42' });
  });
});

describe('the input hash with terms', () => {
  it('is unchanged for a submit without them, and differs with each term (the unkeyed derivation: the keyed one wraps the same text)', () => {
    const before = createHash('sha256').update(['input', 'summarize', '{"text":"a"}'].join('\u0000')).digest('hex');
    expect(unkeyed.inputHash('summarize', { text: 'a' })).toBe(before);
    expect(unkeyed.inputHash('summarize', { text: 'a' }, {})).toBe(before);
    expect(unkeyed.inputHash('summarize', { text: 'a' }, { runAt: undefined })).toBe(before);
    const delayed = unkeyed.inputHash('summarize', { text: 'a' }, { delaySeconds: 60 });
    expect(delayed).not.toBe(before);
    expect(unkeyed.inputHash('summarize', { text: 'a' }, { delaySeconds: 61 })).not.toBe(delayed);
    expect(unkeyed.inputHash('summarize', { text: 'a' }, { runAt: '2030-01-01T00:00:00.000Z' })).not.toBe(delayed);
    expect(unkeyed.inputHash('summarize', { text: 'a' }, { tags: { a: 'b' } })).not.toBe(before);
  });
});

describe('the visible state of a delayed job', () => {
  it('is scheduled while its row is queued and its time ahead, queued after, and never hides another state', () => {
    const later = new Date(now.getTime() + 1_000);
    expect(visibleState({ status: 'queued', run_at: later }, now)).toBe('scheduled');
    expect(visibleState({ status: 'queued', run_at: now }, now)).toBe('queued');
    expect(visibleState({ status: 'queued', run_at: null }, now)).toBe('queued');
    expect(visibleState({ status: 'cancelled', run_at: later }, now)).toBe('cancelled');
    expect(visibleState({ status: 'deferred', run_at: later }, now)).toBe('deferred');
  });
});

describe('the list cursor', () => {
  it('round-trips its position and refuses another list or a forged one', () => {
    const q = parseListQuery(TENANT_LIST_QUERY, { state: 'queued,running', limit: '10' });
    const c = encodeCursor('tenant:a', q, { createdUs: '1780000000000123', jobId: 'job-1' });
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor('tenant:a', parseListQuery(TENANT_LIST_QUERY, { state: ['queued', 'running'], limit: 50 }), c)).toEqual({
      createdUs: '1780000000000123',
      jobId: 'job-1',
    });
    expect(fields(() => decodeCursor('tenant:b', q, c))).toEqual(['cursor']);
    expect(fields(() => decodeCursor('tenant:a', parseListQuery(TENANT_LIST_QUERY, { state: 'queued' }), c))).toEqual(['cursor']);
    for (const bad of ['x', 'a b', Buffer.from('{"v":2}').toString('base64url'), Buffer.from('[]').toString('base64url')])
      expect(fields(() => decodeCursor('tenant:a', q, bad))).toEqual(['cursor']);
  });
});
