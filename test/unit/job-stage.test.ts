import { describe, expect, it } from 'vitest';
import { clock, duration, stageTimings, stageVerdict, type StageFacts } from '../../lib/job-stage.js';

const now = new Date('2026-03-02T12:10:00Z');
const at = (hms: string) => new Date(`2026-03-02T${hms}Z`);
const base = (over: Partial<StageFacts> = {}): StageFacts => ({
  now,
  status: 'queued',
  statusReason: null,
  createdAt: at('12:00:00'),
  workflowStartedAt: at('12:00:01'),
  firstStartedAt: null,
  finishedAt: null,
  deferredAt: null,
  nextAttemptAt: null,
  attempts: 0,
  lastError: null,
  notification: { state: null, failures: 0, pending: 0 },
  ...over,
});

describe('stageVerdict', () => {
  it('intake: an accepted intent whose workflow never started', () => {
    const v = stageVerdict(base({ workflowStartedAt: null }));
    expect(v).toMatchObject({
      stage: 'intake',
      condition: 'stuck',
      words: 'stuck at intake: accepted 12:00:00Z, its workflow not started for 10 min',
    });
  });

  it('intake: a fresh intent whose start mark is still on its way waits; one whose workflow already wrote a state is past intake', () => {
    const fresh = stageVerdict(base({ workflowStartedAt: null, createdAt: at('12:09:58') }));
    expect(fresh).toMatchObject({
      stage: 'intake',
      condition: 'waiting',
      words: 'at intake: accepted 12:09:58Z, its workflow start not recorded yet (2 s)',
    });
    // Past the grace period it is stuck again.
    expect(stageVerdict(base({ workflowStartedAt: null, createdAt: at('12:09:49') })).condition).toBe('stuck');
    // A lost mark: the attempt (or the gate's deferral) shows the workflow runs.
    const running = stageVerdict(base({ workflowStartedAt: null, status: 'running', firstStartedAt: at('12:00:02'), attempts: 1 }));
    expect(running).toMatchObject({ stage: 'side_effects', condition: 'running' });
    const deferred = stageVerdict(base({ workflowStartedAt: null, status: 'deferred', deferredAt: at('12:00:02') }));
    expect(deferred).toMatchObject({ stage: 'claim', condition: 'waiting' });
  });

  it('claim: no poller on the task queue names it and the wait; with pollers it only waits', () => {
    const v = stageVerdict(
      base({ workflowStartedAt: at('12:06:00'), taskQueue: { name: 'durable-jobs', workflowPollers: 0, activityPollers: 0 } }),
    );
    expect(v.words).toBe('stuck at claim: no worker has polled task queue durable-jobs in 4 min');
    expect(v.figure).toBe('0 pollers, 4 min');
    // With the job's type: the worker to start is one given that type (a worker runs only its own types).
    const typed = stageVerdict(
      base({
        jobType: 'invoice',
        workflowStartedAt: at('12:06:00'),
        taskQueue: { name: 'acme-billing', workflowPollers: 0, activityPollers: 0 },
      }),
    );
    expect(typed.words).toBe('stuck at claim: no worker has polled task queue acme-billing for job type invoice in 4 min');
    expect(typed.nextStep).toMatch(/^start a worker given job type invoice .*task queue acme-billing/);
    expect(stageVerdict(base({ taskQueue: { name: 'q', workflowPollers: 2, activityPollers: 0 } })).words).toMatch(
      /^stuck at claim: no activity worker has polled task queue q /,
    );
    const waiting = stageVerdict(base({ taskQueue: { name: 'q', workflowPollers: 1, activityPollers: 1 } }));
    expect(waiting).toMatchObject({ stage: 'claim', condition: 'waiting' });
    expect(stageVerdict(base()).words).toBe('waiting at claim: queued for 10 min, no attempt started yet'); // a tenant: no queue names
  });

  it('claim: deferred, with the reason and for how long', () => {
    const v = stageVerdict(base({ status: 'deferred', statusReason: 'low-priority work is paused by alice', deferredAt: at('12:09:30') }));
    expect(v).toMatchObject({
      stage: 'claim',
      words: 'deferred at claim for 30 s: low-priority work is paused by alice',
      nextStep: 'admitted once its priority is resumed, at the recovery rate',
    });
  });

  it('side effects: in doubt while the call is out, reconciliation pending after it failed', () => {
    const effect = { step: 'charge', state: 'pending' as const, inDoubt: true, sentAt: at('12:03:04'), reconciliations: 0 };
    const running = stageVerdict(base({ status: 'running', firstStartedAt: at('12:03:00'), attempts: 1, pendingEffect: effect }));
    expect(running.words).toBe('side effect in doubt: charge sent 12:03:04Z, no answer for 7 min (attempt 1 waiting)');
    const retrying = stageVerdict(
      base({ status: 'retrying', firstStartedAt: at('12:03:00'), attempts: 1, pendingEffect: effect, nextAttemptAt: at('12:10:05') }),
    );
    expect(retrying.words).toBe('side effect in doubt: charge sent 12:03:04Z, no answer; reconciliation pending (next attempt 12:10:05Z)');
    expect(retrying.condition).toBe('in_doubt');
  });

  it('side effects: a plain retry names the class, status and next attempt; a definite refusal is not in doubt', () => {
    const v = stageVerdict(
      base({
        status: 'retrying',
        firstStartedAt: at('12:01:00'),
        attempts: 2,
        nextAttemptAt: at('12:10:03'),
        lastError: { errorClass: 'rate_limited', statusCode: 429 },
        pendingEffect: { step: 'summarize', state: 'pending', inDoubt: false, sentAt: at('12:09:00'), reconciliations: 0 },
      }),
    );
    expect(v.words).toBe('retrying at side effects: attempt 2 failed with rate_limited (HTTP 429); next attempt 12:10:03Z');
  });

  it('failed at side effects: refused (4xx) vs gave up; the replay and the discard carry on the line', () => {
    const f = base({
      status: 'dead_lettered',
      firstStartedAt: at('12:01:00'),
      finishedAt: at('12:01:02'),
      attempts: 1,
      lastError: { errorClass: 'invalid_request', statusCode: 400 },
    });
    const dl = { id: 'dl-1', state: 'open', failedStep: 'sendReceipt', attempts: 1, discardReason: null };
    expect(stageVerdict({ ...f, deadLetter: dl }).words).toBe(
      'failed at side effects: sendReceipt refused with HTTP 400 (invalid_request), not retried; dead letter dl-1 open',
    );
    expect(
      stageVerdict({ ...f, deadLetter: { ...dl, state: 'replayed' }, replay: { jobId: 'j-replay-1', status: 'succeeded' } }),
    ).toMatchObject({
      words: 'failed at side effects: sendReceipt refused with HTTP 400 (invalid_request), not retried; replayed as j-replay-1 (succeeded)',
      nextStep: 'none: the replay job j-replay-1 took over this job',
    });
    expect(
      stageVerdict({ ...f, deadLetter: { ...dl, state: 'discarded', discardReason: 'duplicate order', discardedBy: 'bob' } }).words,
    ).toMatch(/discarded by bob: duplicate order$/);
    const gaveUp = stageVerdict({
      ...f,
      attempts: 8,
      lastError: { errorClass: 'upstream_unavailable', statusCode: 503 },
      deadLetter: { ...dl, attempts: 8 },
    });
    expect(gaveUp.words).toBe(
      'failed at side effects: sendReceipt gave up after 8 attempts: upstream_unavailable (HTTP 503); dead letter dl-1 open',
    );
  });

  it('failed on the first attempt without an HTTP status: not retried, never "gave up after"; the attempts of all steps do not leak into it', () => {
    const f = base({
      status: 'dead_lettered',
      firstStartedAt: at('12:01:00'),
      finishedAt: at('12:01:02'),
      attempts: 1,
      lastError: { errorClass: 'validation_error' },
    });
    // The dead letter counts charge once + receipt once; the job's highest attempt is 1.
    const dl = { id: 'dl-1', state: 'open', failedStep: 'sendReceipt', attempts: 2, discardReason: null };
    const v = stageVerdict({ ...f, deadLetter: { ...dl, retryState: 'NON_RETRYABLE_FAILURE' } });
    expect(v.words).toBe(
      'failed at side effects: sendReceipt failed on the first attempt, not retried: validation_error; dead letter dl-1 open',
    );
    expect(v.figure).toBe('1 attempt');
    // Its own retry budget spent on a later attempt is non-retryable for Temporal, but it was retried.
    const spent = stageVerdict({ ...f, attempts: 3, deadLetter: { ...dl, attempts: 4, retryState: 'NON_RETRYABLE_FAILURE' } });
    expect(spent.words).toBe('failed at side effects: sendReceipt gave up after 3 attempts: validation_error; dead letter dl-1 open');
  });

  it('completion: done, notification pending, notification failed', () => {
    const f = base({ status: 'succeeded', firstStartedAt: at('12:01:00'), finishedAt: at('12:01:02') });
    expect(stageVerdict(f)).toMatchObject({ stage: 'completion', condition: 'done', words: 'completed 12:01:02Z' });
    expect(stageVerdict({ ...f, notification: { state: 'failed', failures: 3, pending: 1 } }).words).toBe(
      'completed 12:01:02Z; notification failed 3 times (outbox)',
    );
    expect(stageVerdict({ ...f, notification: { state: 'pending', failures: 1, pending: 1 } }).words).toBe(
      'completed 12:01:02Z; notification pending (outbox), failed once so far',
    );
  });

  it('an activity paused in Temporal: who paused it, why and since when, before any retry wording', () => {
    const v = stageVerdict(
      base({
        status: 'retrying',
        firstStartedAt: at('12:00:02'),
        attempts: 2,
        nextAttemptAt: at('12:20:00'),
        lastError: { errorClass: 'http_503' },
        pausedActivity: { activityType: 'summarize', since: at('12:05:00'), by: 'ops-dana', reason: 'upstream asked', attempt: 2 },
      }),
    );
    expect(v).toMatchObject({
      stage: 'side_effects',
      condition: 'waiting',
      words: 'paused at side effects: activity summarize is paused in Temporal by ops-dana since 12:05:00Z (upstream asked), attempt 2',
      figure: 'paused 5 min',
    });
    expect(v.nextStep).toContain('temporal activity unpause --workflow-id <job ID> --activity-type summarize');
    // The gate's activity paused before any step ran: at claim; a rule's pause without a time.
    const gate = stageVerdict(base({ pausedActivity: { activityType: 'gate', since: null, by: 'rule r1', reason: null, attempt: 1 } }));
    expect(gate).toMatchObject({
      stage: 'claim',
      words: 'paused at claim: activity gate is paused in Temporal by rule r1, attempt 1',
      figure: 'paused',
    });
  });

  it('cancelled at the stage it had reached', () => {
    expect(stageVerdict(base({ status: 'cancelled', finishedAt: at('12:02:00') })).words).toBe('cancelled at claim on request 12:02:00Z');
  });
});

describe('stageTimings', () => {
  it('keeps queue wait and execution apart per stage', () => {
    const t = stageTimings(
      {
        now,
        status: 'succeeded',
        createdAt: at('12:00:00'),
        workflowStartedAt: at('12:00:01'),
        deferredAt: at('12:00:02'),
        admittedAt: at('12:00:10'),
        firstStartedAt: at('12:00:12'),
        finishedAt: at('12:00:30'),
      },
      [
        { step: 'summarize', startedAt: at('12:00:12'), finishedAt: at('12:00:15') }, // failed, then a 10 s retry delay
        { step: 'summarize', startedAt: at('12:00:25'), finishedAt: at('12:00:30') },
        { step: 'notify', startedAt: at('12:00:31'), finishedAt: at('12:00:32') },
        { step: 'notify-email', startedAt: at('12:00:35'), finishedAt: at('12:00:36') },
      ],
    );
    expect(t).toEqual({
      intake: { executionMs: 1_000 },
      claim: { queueMs: 2_000, deferredMs: 8_000 },
      sideEffects: { executionMs: 8_000, queueMs: 10_000 },
      completion: { executionMs: 2_000, queueMs: 4_000 },
    });
  });
});

describe('formatting', () => {
  it('clock shows the time today and the date otherwise; duration rounds to a readable unit', () => {
    expect(clock(at('09:08:07'), now)).toBe('09:08:07Z');
    expect(clock(new Date('2026-03-01T23:59:59.500Z'), now)).toBe('2026-03-01T23:59:59Z');
    expect([850, 12_000, 240_000, 3 * 3_600_000 + 300_000].map(duration)).toEqual(['850 ms', '12 s', '4 min', '3 h 5 min']);
  });
});
