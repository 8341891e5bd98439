import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { StepAttempt, type AttemptOf } from '../../activities/step-attempt.js';
import { defineUpstream, type EffectCall, type Upstream } from '../../job-api/upstream.js';
import { NonRetryableError, RetryableError } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import { FakeAttemptStore, fakeEnv, type FakeEffect } from '../support/fake-attempt-store.js';
import type { AttemptEnv } from '../../activities/step-attempt.js';

// The step attempt's transitions (activities/step-attempt.ts) against an in-memory store: which
// statements each makes, in which order, and what it leaves behind on every path.

const log = createLogger('step-attempt-test', 'silent');
const classify = (e: unknown) =>
  e instanceof RetryableError || e instanceof NonRetryableError ? e : new RetryableError(String(e), { errorClass: 'x' });
const idempotent = defineUpstream({ name: 'up', semantics: 'idempotentByKey', classify });
const none = defineUpstream({ name: 'up', semantics: 'none', classify });
const KEY = 'job-1:charge';

function setup(o: { of?: Partial<AttemptOf>; env?: Partial<AttemptEnv> } = {}) {
  const store = new FakeAttemptStore();
  const env = fakeEnv(o.env);
  const attempt = new StepAttempt(
    { store, env, log },
    {
      args: { jobId: 'job-1', tenantId: 't', jobType: 'charge' },
      step: 'charge',
      slots: { limits: { perTenant: 1, global: 1 } },
      ...o.of,
    },
  );
  return { store, env, attempt };
}

/** A leased activity's lease scope (activities/lease-tracking.ts), its row not written yet. */
function leaseScope() {
  return {
    key: { jobId: 'job-1', runId: 'run-1', activityId: '1', attempt: 1 },
    activityType: 'a',
    startToCloseMs: 1,
    started: false,
    ended: false,
  };
}

/** A call that answers, or throws, and counts itself. */
function call(answer: { id: string } | Error): EffectCall & { calls: number } {
  const fn = Object.assign(
    async () => {
      fn.calls++;
      if (answer instanceof Error) throw answer;
      return { response: answer, providerId: answer.id, providerRequestId: 'req-1', status: 200 };
    },
    { calls: 0 },
  );
  return fn;
}

const effect = (a: StepAttempt, c: EffectCall, through: Upstream = idempotent, storeWithResult = false) =>
  a.effect({ step: 'charge', call: c, through, timeoutMs: 1_000, storeWithResult });

function seed(store: FakeAttemptStore, e: Partial<FakeEffect>): void {
  store.effects.set(KEY, {
    state: 'pending',
    inDoubt: true,
    attempts: 1,
    reconciliations: 0,
    providerId: null,
    providerRequestId: null,
    result: null,
    upstream: 'primary',
    ...e,
  });
}

describe('start and gate', () => {
  it('start marks the job running with its lease row in the same statement, and the attempt is started', async () => {
    const lease = leaseScope();
    const { store, attempt } = setup({ of: { lease } });
    await attempt.start();
    expect([store.status, attempt.phase, lease.started, store.log]).toEqual(['running', 'started', true, ['start']]);
  });

  it('not admitted: nothing written, the lease is done with, and the wait goes back to the workflow', async () => {
    const lease = leaseScope();
    const { store, attempt } = setup({
      of: {
        lease,
        args: { jobId: 'job-1', tenantId: 't', admitInStep: true, slotWait: { attemptOffset: 0, resumed: false, waitsReturn: true } },
      },
    });
    store.admitted = false;
    const out = await attempt.run(async () => 'ran', { step: 'charge' });
    expect(out).toMatchObject({ durableJobsWait: 'admission' });
    expect([store.status, store.rows, lease.started, lease.ended]).toEqual(['queued', [], true, true]);
  });

  it('not admitted, for a workflow from before waitsReturn: a non-retryable AdmissionWait failure', async () => {
    const { store, attempt } = setup({ of: { args: { jobId: 'job-1', tenantId: 't', admitInStep: true } } });
    store.admitted = false;
    const err = await attempt.run(async () => 'ran', { step: 'charge' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'AdmissionWait', nonRetryable: true });
  });
});

describe('claim, call, record', () => {
  it('a fresh effect: claimed with its slot before the call, the IDs and the slot release in one statement after it', async () => {
    const { store, attempt } = setup();
    await attempt.start();
    const c = call({ id: 'ch_1' });
    const r = await effect(attempt, c);
    expect(r).toMatchObject({ via: 'executed', providerId: 'ch_1', providerRequestId: 'req-1' });
    expect(store.log).toEqual(['start', 'claimEffect', 'storeSuccess']);
    expect([c.calls, store.slots.size, store.renewed.size, store.effects.get(KEY)!.state]).toEqual([1, 0, 0, 'succeeded']);
    expect(store.rows.map((x) => x.outcome)).toEqual(['succeeded']);
  });

  it('an effect a previous attempt stored: reused without a call, one reused row', async () => {
    const { store, attempt } = setup();
    seed(store, { state: 'succeeded', inDoubt: false, providerId: 'ch_0', result: { id: 'ch_0' } });
    const c = call({ id: 'ch_1' });
    const r = await effect(attempt, c);
    expect([r.via, r.providerId, c.calls, store.slots.size]).toEqual(['reused', 'ch_0', 0, 0]);
    expect(store.rows.map((x) => x.outcome)).toEqual(['reused']);
  });

  it('stale (a newer attempt has started): the claim is refused, nothing is called', async () => {
    const { store, attempt } = setup();
    store.newest = 2;
    const c = call({ id: 'ch_1' });
    await expect(effect(attempt, c)).rejects.toMatchObject({ details: { errorClass: 'stale_attempt' } });
    expect([c.calls, store.effects.size, store.slots.size]).toEqual([0, 0, 0]);
  });

  it('a refused effect is not called again (outside a replay)', async () => {
    const { store, attempt } = setup();
    seed(store, { state: 'failed', inDoubt: false });
    await expect(effect(attempt, call({ id: 'x' }))).rejects.toMatchObject({ details: { errorClass: 'effect_failed' } });
  });

  it('in doubt, lookup finds it: recorded from the lookup, counted as a reconciliation, no second call', async () => {
    const { store, attempt } = setup();
    seed(store, {});
    const lookup = defineUpstream({
      name: 'up',
      semantics: 'lookupByKey',
      classify,
      lookup: async () => ({ response: { id: 'ch_0' }, providerId: 'ch_0', providerRequestId: 'req-0' }),
    });
    const c = call({ id: 'ch_1' });
    const r = await effect(attempt, c, lookup);
    expect([r.via, r.providerId, r.providerRequestId, c.calls]).toEqual(['reconciled', 'ch_0', 'req-0', 0]);
    expect(store.log).toEqual(['claimEffect', 'reopen', 'storeLookedUp', 'row:reconciled']);
    expect([store.effects.get(KEY)!.reconciliations, store.slots.size]).toEqual([1, 0]);
  });

  it('in doubt, lookup does not find it: sent again with the same key, holding a slot only for the call', async () => {
    const { store, attempt } = setup();
    seed(store, {});
    const lookup = defineUpstream({ name: 'up', semantics: 'lookupByKey', classify, lookup: async () => undefined });
    const c = call({ id: 'ch_1' });
    const r = await effect(attempt, c, lookup);
    expect([r.via, c.calls, store.slots.size]).toEqual(['reconciled', 1, 0]);
    expect(store.log).toEqual(['claimEffect', 'reopen', 'tryAcquireSlot', 'storeSuccess']);
  });

  it('in doubt at an upstream that is neither idempotent nor looked up: stopped for an operator, never re-sent', async () => {
    const { store, attempt } = setup();
    seed(store, {});
    const c = call({ id: 'ch_1' });
    await expect(effect(attempt, c, none)).rejects.toMatchObject({ details: { errorClass: 'effect_in_doubt', upstream: 'up' } });
    expect(c.calls).toBe(0);
  });

  it('a call that fails retryably (no status: in doubt) keeps the doubt and frees the slot', async () => {
    const { store, attempt } = setup();
    await expect(effect(attempt, call(new RetryableError('reset', { errorClass: 'network' })))).rejects.toBeInstanceOf(RetryableError);
    expect([store.effects.get(KEY)!.inDoubt, store.slots.size, store.renewed.size]).toEqual([true, 0, 0]);
  });

  it('a 429 says "not applied": the doubt is cleared, the slot freed', async () => {
    const { store, attempt } = setup();
    await expect(effect(attempt, call(new RetryableError('slow down', { errorClass: 'rate_limited', statusCode: 429 })))).rejects.toThrow();
    expect([store.effects.get(KEY)!.inDoubt, store.slots.size, store.log.includes('clearDoubt')]).toEqual([false, 0, true]);
  });

  it('a non-retryable refusal marks the effect failed and frees the slot', async () => {
    const { store, attempt } = setup();
    await expect(
      effect(attempt, call(new NonRetryableError('declined', { errorClass: 'card_declined', statusCode: 402 }))),
    ).rejects.toThrow();
    expect([store.effects.get(KEY)!.state, store.slots.size]).toEqual(['failed', 0]);
  });

  it('no slot free and the workflow waits: the claim is taken back, the job waits queued, nothing is held', async () => {
    const { store, attempt } = setup({
      of: { args: { jobId: 'job-1', tenantId: 't', jobType: 'charge', slotWait: { attemptOffset: 0, resumed: false, waitsReturn: true } } },
    });
    store.slots.add('someone-else');
    const c = call({ id: 'ch_1' });
    const out = await attempt.run(() => effect(attempt, c), { step: 'charge' });
    expect(out).toMatchObject({ durableJobsWait: 'slot', attempt: 1 });
    expect([c.calls, store.effects.has(KEY), store.status, store.waiters.has('job-1'), store.rows]).toEqual([0, false, 'queued', true, []]);
    expect([...store.slots]).toEqual(['someone-else']);
  });

  it('a slot freed between the failed try and the registration is taken: no wait that nothing would wake', async () => {
    const { store, attempt } = setup({
      of: { args: { jobId: 'job-1', tenantId: 't', jobType: 'charge', slotWait: { attemptOffset: 0, resumed: false, waitsReturn: true } } },
    });
    store.slots.add('someone-else');
    // The holder's release lands just as the job registers: it found no waiter to wake.
    const register = store.registerWaiter;
    store.registerWaiter = async (w) => (await register(w), void store.slots.delete('someone-else'));
    const c = call({ id: 'ch_1' });
    const out = await attempt.run(() => effect(attempt, c), { step: 'charge' });
    expect(out).toMatchObject({ via: 'executed', providerId: 'ch_1' });
    expect(store.log).toEqual([
      'start',
      'claimEffect',
      'tryAcquireSlot',
      'registerWaiter',
      'tryAcquireSlot',
      'forgetWaiter',
      'storeSuccess',
      'addSpan',
    ]);
    expect([c.calls, store.status, store.waiters.size, store.slots.size]).toEqual([1, 'running', 0, 0]);
  });

  it('resumed after a wait in the workflow: its slot marks it running and it stops being a waiter', async () => {
    const { store, attempt } = setup({
      of: { args: { jobId: 'job-1', tenantId: 't', jobType: 'charge', slotWait: { attemptOffset: 2, resumed: true, waitsReturn: true } } },
    });
    store.waiters.add('job-1');
    await effect(attempt, call({ id: 'ch_1' }));
    expect(store.log).toEqual(['claimEffect', 'forgetWaiter', 'markRunning', 'storeSuccess']);
    expect([store.waiters.size, store.rows[0]!.attempt]).toEqual([0, 3]);
  });

  it('no slot free and no wait in the workflow: polls until one is free, the wait left out of the span', async () => {
    const { store, attempt } = setup({ env: { sleep: async () => void store.slots.delete('someone-else') } });
    store.slots.add('someone-else');
    await attempt.run(() => effect(attempt, call({ id: 'ch_1' })), { step: 'charge' });
    expect(store.log).toEqual([
      'start',
      'claimEffect',
      'tryAcquireSlot',
      'markWaiting',
      'tryAcquireSlot',
      'markRunning',
      'storeSuccess',
      'addSpan',
    ]);
    expect(store.slots.size).toBe(0);
  });
});

describe('complete', () => {
  it('storeWithResult: the success (and its slot release) commits in the result statement, not before', async () => {
    const { store, attempt } = setup();
    await attempt.start();
    await effect(attempt, call({ id: 'ch_1' }), idempotent, true);
    expect([store.log.includes('storeSuccess'), store.slots.size]).toEqual([false, 1]);
    expect(await attempt.complete({ ok: true })).toBe(true);
    expect([store.status, store.effects.get(KEY)!.state, store.slots.size, attempt.phase]).toEqual([
      'succeeded',
      'succeeded',
      0,
      'completed',
    ]);
  });

  it('a handed-off success is committed before the next effect claims', async () => {
    const { store, attempt } = setup();
    await effect(attempt, call({ id: 'ch_1' }), idempotent, true);
    await attempt.effect({ step: 'receipt', call: call({ id: 'r_1' }), through: idempotent, timeoutMs: 1_000 });
    expect(store.log).toEqual(['claimEffect', 'storeSuccess', 'claimEffect', 'storeSuccess']);
  });

  it('stale at the end: the result write is refused and recorded as a fenced attempt', async () => {
    const { store, attempt } = setup();
    await attempt.start();
    store.newest = 2;
    expect(await attempt.complete({ ok: true })).toBe(false);
    expect(store.rows.map((r) => [r.outcome, r.errorClass])).toEqual([['fenced', 'stale_attempt']]);
  });

  it('a handed-off success is still committed when the step fails after it', async () => {
    const { store, attempt } = setup();
    const err = await attempt
      .run(
        async () => {
          await effect(attempt, call({ id: 'ch_1' }), idempotent, true);
          throw new Error('boom');
        },
        { step: 'charge' },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect([store.effects.get(KEY)!.state, store.slots.size]).toEqual(['succeeded', 0]);
    expect(store.log.slice(-4)).toEqual(['storeSuccess', 'addSpan', 'row:retryable', 'markRetrying']);
  });
});

describe('fail: the one retry layer', () => {
  it('retryable: its row, the job retrying (fenced), a RetryableError failure with the chosen delay', async () => {
    const { store, attempt } = setup();
    const err = (await attempt
      .fail(new RetryableError('busy', { errorClass: 'upstream_5xx', statusCode: 503, retryAfterMs: 2_000 }))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect([err.type, err.nonRetryable, err.nextRetryDelay]).toEqual(['RetryableError', false, 2_000]);
    expect(store.rows.map((r) => [r.outcome, r.delayMs, r.delaySource])).toEqual([['retryable', 2_000, 'retry-after']]);
    expect([store.status, store.retrying]).toEqual(['retrying', [{ attempt: 1, errorClass: 'upstream_5xx' }]]);
  });

  it('non-retryable: its row, no retrying mark, a non-retryable failure of its class', async () => {
    const { store, attempt } = setup();
    const err = (await attempt
      .fail(new NonRetryableError('declined', { errorClass: 'card_declined', providerCode: 'card_declined', upstream: 'up' }))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect([err.type, err.nonRetryable]).toEqual(['NonRetryableError', true]);
    expect(store.rows.map((r) => [r.outcome, r.errorClass, r.providerCode, r.upstream])).toEqual([
      ['non_retryable', 'card_declined', 'card_declined', 'up'],
    ]);
    expect(store.log).not.toContain('markRetrying');
  });

  it('the last attempt: stops now as RetryBudgetExhausted instead of retrying into the cap', async () => {
    const { store, attempt } = setup({ env: { scheduleAttempt: 5, maximumAttempts: 5 } });
    const err = (await attempt
      .fail(new RetryableError('busy', { errorClass: 'upstream_5xx' }))
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect([err.type, err.nonRetryable]).toEqual(['RetryBudgetExhausted', true]);
    expect(store.rows.map((r) => r.outcome)).toEqual(['non_retryable']);
  });

  it('stale when it fails: the row is written, the status write refused', async () => {
    const { store, attempt } = setup();
    store.newest = 2;
    await expect(attempt.fail(new Error('boom'))).rejects.toMatchObject({ type: 'RetryableError' });
    expect([store.rows.length, store.status, store.retrying]).toEqual([1, 'queued', []]);
  });

  it('cancelled: nothing recorded, the cancellation goes on; at a worker shutdown it retries at once elsewhere', async () => {
    const { store, attempt } = setup();
    const c = new CancelledFailure('cancelled');
    await expect(attempt.fail(c)).rejects.toBe(c);
    expect(store.rows).toEqual([]);
    const shut = setup({ env: { cancellation: () => ({ cancelled: true, workerShutdown: true }) } });
    await expect(shut.attempt.fail(c)).rejects.toMatchObject({ type: 'RetryableError' });
    expect(shut.store.rows.map((r) => r.errorClass)).toEqual(['worker_shutdown']);
  });
});
