/**
 * One step attempt as one object: its state (below), its statements (store/step-attempt.ts),
 * its transitions here, in the order they happen:
 *
 *   start ─ gate ─┬─ (the step's body) ─ effect: claim ─┬─ reuse            ─┐
 *                 │                                      ├─ look up (in doubt) ┤
 *                 │                                      └─ call ─ record     ─┤
 *                 └────────────────────────────────────────────────────────────┴─ complete | fail
 *
 * The crash-safe order: the lease row (the fence) commits with the attempt's first write; the
 * effect's claim commits before the call; the provider's IDs commit at once after it (or in the
 * step's last statement, `storeWithResult`), before anything else of the attempt; an in-doubt
 * effect is looked up (or re-sent with its key, or stopped) before any re-send; every write is
 * fenced; the concurrency slot is held only for the call and freed on every path; a failure is
 * classified once (the one retry layer) with one `job_attempts` row per attempt.
 *
 * Temporal is behind `AttemptEnv` (activities/attempt.ts `temporalEnv`) and Postgres behind
 * `AttemptStore`, so the transitions are unit-tested against a fake of each.
 */
import { CancelledFailure } from '@temporalio/activity';
import { DEFAULT_BUDGET, type StepWait } from '../contract/job-types.js';
import { NonRetryableError, NotAdmittedError, RetryableError, SlotUnavailableError } from '../lib/errors.js';
import { effectKeyFor } from '../lib/ids.js';
import type { AttemptFence, AttemptStart, ClaimedEffectRow, EffectSuccess } from '../store/step-attempt.js';
import { decideFailure } from './attempt-failure.js';
import {
  numberLocal,
  resultOf,
  waitOf,
  whenDatabaseIsBack,
  type AttemptDeps,
  type AttemptOf,
  type AttemptPhase,
  type EffectAsk,
} from './step-attempt-spec.js';
import { acquireSlot, slotRequest } from './concurrency.js';
export type { AttemptDeps, AttemptEnv, AttemptOf, AttemptPhase, EffectAsk } from './step-attempt-spec.js';
import { chooseUpstream, planFrom, type FallbackPlan } from './fallback.js';
import type { LeaseScope } from './lease-tracking.js';
import type { Provider } from './provider.js';
import { adapterFor, requestHashOf, type Answer, type EffectAdapter, type EffectResult } from './upstream-call.js';

interface Claimed {
  row: ClaimedEffectRow;
  reconciling: boolean;
  provider: Provider | undefined;
}

export class StepAttempt {
  phase: AttemptPhase = 'new';
  readonly startedAt: Date;
  /** The schedule's attempt: Temporal's, or for a local activity the one its lease row got. */
  private schedule: number;
  private first: AttemptStart | undefined;
  /** Time spent waiting for a slot: not execution time. */
  private waitedMs = 0;
  /** Scheduled again after a wait for a slot: the job stays `queued` until this attempt has one. */
  private resumed: boolean;
  /** A success handed off (`storeWithResult`) and not yet committed. */
  private handedOff: EffectSuccess | undefined;
  private spanRecorded = false;

  constructor(
    private readonly deps: AttemptDeps,
    readonly of: AttemptOf,
  ) {
    this.startedAt = of.startedAt ?? new Date();
    this.schedule = deps.env.scheduleAttempt;
    this.resumed = of.args.slotWait?.resumed ?? false;
  }

  /** The job's attempt number: the schedule's plus the step's attempts before this schedule. */
  get attempt(): number {
    return this.schedule + (this.of.args.slotWait?.attemptOffset ?? 0);
  }

  /** Every write is fenced by this (store/fence.ts); the lease rows number one schedule's attempts, so no offset. */
  get fence(): AttemptFence | undefined {
    const a = this.deps.env.activity;
    return a && { ...a, attempt: this.schedule };
  }

  private get jobId(): string {
    return this.of.args.jobId;
  }

  /** The whole attempt: start (with the gate), the step's body, then its end, or `fail`. */
  async run<T>(body: () => Promise<T>, heartbeat: { step: string; progress?: unknown }): Promise<T> {
    try {
      const result = await this.deps.env.heartbeat(async () => {
        await this.start();
        this.phase = 'running';
        return body();
      }, heartbeat);
      await this.settle('completed');
      return result;
    } catch (err) {
      await this.settle(err instanceof CancelledFailure ? 'cancelled' : 'failed');
      return (await this.fail(err)) as T;
    }
  }

  /**
   * The attempt's first statement: its lease row, the job `running`, the gate's question, the
   * setting (its fallback decision) and maybe the input. A schedule's first attempt fences no
   * earlier one: its start is evidence only, committed without waiting for the flush; the
   * effect's claim, synchronous, flushes it. A local attempt's number comes from its lease row.
   */
  async start(): Promise<void> {
    const { lease, local, args } = this.of;
    const admitCheck = args.admitInStep === true;
    const opts = {
      withInput: this.of.prefetchInput ?? false,
      lease:
        lease && !lease.started
          ? {
              ...lease.key,
              attempt: local ? null : lease.key.attempt,
              activityType: lease.activityType,
              startToCloseMs: lease.startToCloseMs,
              step: this.of.step,
            }
          : undefined,
      stillWaiting: this.resumed,
      admitCheck,
      holdCheck: !admitCheck && args.holdIfPaused === true,
    };
    const first = await whenDatabaseIsBack(this.deps, this.jobId, () =>
      local
        ? this.deps.store.start(this.jobId, null, undefined, opts)
        : this.deps.store.start(this.jobId, this.attempt, this.fence, { ...opts, asyncCommit: this.fence?.attempt === 1 }),
    );
    this.first = first;
    if (lease) lease.started = first.admitted;
    this.phase = 'started';
    this.gate(first);
    if (local && lease) await this.numberLocal(lease, first.attempt);
  }

  /**
   * Not admitted at once (`StepArgs.admitInStep`, or a pause holds a later step): the statement
   * wrote nothing, no lease row either, and the workflow runs the gate. A leased activity's
   * tracking must not write a lease row afterwards as evidence of an attempt that never began.
   */
  private gate(first: AttemptStart): void {
    if (first.admitted) return;
    const { lease, local, args } = this.of;
    if (lease && !local) lease.started = lease.ended = true;
    throw new NotAdmittedError(
      args.holdIfPaused === true && args.admitInStep !== true
        ? 'a pause holds the job at this step; the workflow runs the gate'
        : 'the degradation gate did not admit the job at once; the workflow runs the gate',
    );
  }

  /** The job's input: read by the first statement when asked for, else now. */
  async input<I>(): Promise<I> {
    const pre = this.first?.input;
    const input = pre !== undefined && pre !== null ? pre : await this.deps.store.loadInput(this.jobId);
    // The intake commits the intent before it starts the workflow, so this is reachable only
    // in the race where a failed concurrent start removed the row and services/start-marks.ts writes it again.
    if (input === undefined) throw new RetryableError('job intent not visible yet', { errorClass: 'intent_not_committed' });
    return input as I;
  }

  /** One effect: claim it, then reuse its stored answer, look it up (in doubt), or call and record. */
  async effect(ask: EffectAsk): Promise<EffectResult> {
    await this.storeHandedOff();
    const effectKey = ask.effectKey ?? effectKeyFor(this.of.args.effectScope ?? this.jobId, ask.step);
    const claimed = await this.claim(ask, effectKey);
    if ('via' in claimed) return claimed;
    const log = { jobId: this.jobId, effectKey, step: ask.step };
    let adapter: EffectAdapter;
    try {
      adapter = adapterFor(ask, claimed.provider, { step: ask.step, tenantId: this.of.args.tenantId });
      if (claimed.row.state === 'failed') this.deps.log.info(log, 'replay: calling a previously refused effect again');
      const known = claimed.reconciling ? await this.lookUp(ask, effectKey, adapter) : undefined;
      if (known) return resultOf(effectKey, known, 'reconciled');
    } catch (err) {
      // The claim may have taken a slot for this call: nothing will use it now.
      if (claimed.row.slot_id) await this.releaseSlot(claimed.row.slot_id);
      throw err;
    }
    const answer = await this.call(ask, effectKey, adapter, claimed);
    this.deps.log.info(
      { ...log, upstream: adapter.name, providerId: answer.providerId, reconciled: claimed.reconciling },
      'effect applied',
    );
    return resultOf(effectKey, answer, claimed.reconciling ? 'reconciled' : 'executed');
  }

  /**
   * The claim, in one statement: the effect row (unique on its key), and for an effect sent
   * afresh its upstream and its slot. What the row says: stale (a newer attempt started),
   * succeeded before (reused, no call), refused before (only a replay sends it again), in doubt
   * (reconciled with the upstream it was sent to: counted, and the choice recorded, in one
   * transaction), or new. Refusals are thrown after the commit, so the claim stays recorded.
   */
  private async claim(ask: EffectAsk, effectKey: string): Promise<Claimed | EffectResult> {
    const { args, slots } = this.of;
    const plan = ask.fallback ?? this.fallbackPlan();
    const afresh = plan
      ? chooseUpstream({ inserted: true, was_in_doubt: false }, plan, this.deps.fallbackProvider !== undefined)
      : undefined;
    const replay = (args.effectScope ?? args.jobId) !== args.jobId;
    const slot = slots && slotRequest({ ...this.slotOwner(ask.step), limits: slots.limits, total: slots.total });
    const row = await this.deps.store.claimEffect(
      {
        effectKey,
        jobId: args.effectScope ?? args.jobId,
        tenantId: args.tenantId,
        step: ask.step,
        requestHash: requestHashOf(ask, ask.step),
      },
      this.fence,
      { upstream: afresh, replay, jobId: args.jobId, slot },
    );
    if (!row)
      throw new RetryableError(`stale attempt ${this.attempt}: a newer attempt of this step has started`, { errorClass: 'stale_attempt' });
    if (row.state === 'succeeded') {
      await this.deps.store.recordAttempt({ ...this.row(ask.step), outcome: 'reused' });
      this.deps.log.info({ jobId: this.jobId, effectKey, step: ask.step }, 'effect already applied; reusing stored result');
      return resultOf(
        effectKey,
        { status: undefined, response: row.result, providerId: row.provider_id, providerRequestId: row.provider_request_id },
        'reused',
      );
    }
    if (row.state === 'failed' && !replay)
      throw new NonRetryableError(`effect ${ask.step} failed permanently before; not calling again`, { errorClass: 'effect_failed' });
    const reconciling = !row.inserted && row.was_in_doubt;
    // An effect in doubt stays with the upstream it was sent to (activities/fallback.ts).
    const choice = reconciling ? plan && chooseUpstream(row, plan, this.deps.fallbackProvider !== undefined) : afresh;
    const provider = choice?.upstream === 'fallback' ? this.deps.fallbackProvider : this.deps.provider;
    if (reconciling || row.state === 'failed') {
      const upstream = reconciling && choice && provider ? { jobId: args.jobId, ...choice } : undefined;
      await this.deps.store.reopen(effectKey, { reopen: row.state === 'failed', reconcile: reconciling, upstream }, this.fence);
    }
    // In doubt at the fallback, on a worker without one: another worker (or this one, once configured) reconciles it there. Never the primary.
    if (!provider && choice?.upstream === 'fallback')
      throw new RetryableError('effect is in doubt at the fallback upstream and this worker has no PROVIDER_FALLBACK_URL', {
        errorClass: 'fallback_not_configured',
      });
    if (choice?.upstream === 'fallback')
      this.deps.log.warn({ jobId: this.jobId, effectKey, reason: choice.reason }, 'calling the fallback upstream');
    return { row, reconciling, provider };
  }

  /**
   * Before re-sending an in-doubt effect: for an upstream that answers lookups by key, ask
   * whether it was applied. Completed: its stored answer (with the original request's ID) is
   * recorded and returned (no second call). In progress: retry later (it throws). Unknown: not
   * applied, the call sends it. Without a lookup, an upstream that is not idempotent by key is
   * never re-sent blind: the effect stops for an operator.
   */
  private async lookUp(ask: EffectAsk, effectKey: string, adapter: EffectAdapter): Promise<Answer | undefined> {
    if (adapter.inDoubt === 'resend') return undefined;
    if (adapter.inDoubt === 'stop')
      throw new NonRetryableError(`effect ${ask.step} is in doubt and its upstream is not idempotent by key: not sending it again`, {
        errorClass: 'effect_in_doubt',
        upstream: adapter.name,
      });
    const found = await adapter.lookup(effectKey, { signal: this.deps.env.signal, timeoutMs: ask.timeoutMs });
    if (!found) return undefined;
    await this.deps.store.storeLookedUp(effectKey, found, this.fence);
    await this.deps.store.recordAttempt({ ...this.row(ask.step), outcome: 'reconciled', statusCode: found.status });
    this.deps.log.info(
      { jobId: this.jobId, effectKey, step: ask.step, upstream: adapter.name, providerId: found.providerId },
      'in-doubt effect was applied upstream (looked up by key); not calling again',
    );
    return found;
  }

  /**
   * The call, holding its slot (the claim's, or one taken now) for the call only, then at once
   * `record`. No slot free and the workflow waits for one: nothing was sent, so the claim is
   * taken back (a row it created goes, else its doubt is cleared); an effect that was in doubt
   * before stays in doubt. The slot is freed on every path: with the success, or here.
   */
  private async call(ask: EffectAsk, effectKey: string, adapter: EffectAdapter, c: Claimed): Promise<Answer> {
    let slotId: string | null = null;
    if (this.of.slots) {
      try {
        const scope = { ...this.slotOwner(ask.step), ...this.of.slots, attempt: this.attempt, attemptStartedAt: this.startedAt };
        const got = await acquireSlot(
          this.deps.store,
          this.deps.env,
          this.deps.log,
          { ...scope, fence: this.fence, resumed: this.resumed, waitInWorkflow: this.of.args.slotWait !== undefined },
          c.row.slot_id,
        );
        slotId = got.id;
        this.waitedMs += got.waitedMs;
        this.resumed = false;
      } catch (err) {
        if (err instanceof SlotUnavailableError && !c.reconciling)
          await this.deps.store.withdrawClaim(effectKey, c.row.inserted, this.fence);
        throw err;
      }
    }
    const stopRenewing = slotId ? this.deps.store.renewing(slotId) : undefined;
    let freed = false;
    try {
      const answer = await this.send(effectKey, adapter, ask.timeoutMs);
      await this.record(ask, effectKey, answer, c.reconciling, slotId);
      freed = true;
      return answer;
    } finally {
      stopRenewing?.();
      if (slotId && !freed) await this.releaseSlot(slotId);
    }
  }

  /** The request itself. 429 and 4xx mean "not applied"; 5xx, timeouts, resets and a 409 "key in progress" leave the effect in doubt. */
  private async send(effectKey: string, adapter: EffectAdapter, timeoutMs: number): Promise<Answer> {
    try {
      return await adapter.call({ effectKey, attempt: this.attempt, timeoutMs, signal: this.deps.env.signal });
    } catch (err) {
      if (err instanceof NonRetryableError) await this.deps.store.failEffect(effectKey, this.fence);
      const d = err instanceof RetryableError ? err.details : undefined;
      if (d?.statusCode !== undefined && d.statusCode < 500 && d.errorClass !== 'request_in_progress')
        await this.deps.store.clearDoubt(effectKey, this.fence);
      throw err;
    }
  }

  /**
   * The provider's IDs, the attempt's row and the slot's release in one statement, at once; or
   * handed to the step's last statement (`storeWithResult`), which commits it before the
   * activity returns (else `settle` does, before anything else of the attempt).
   */
  private async record(ask: EffectAsk, effectKey: string, answer: Answer, reconciling: boolean, slotId: string | null): Promise<void> {
    const success: EffectSuccess = {
      effectKey,
      providerRequestId: answer.providerRequestId,
      providerId: answer.providerId,
      result: answer.response,
      fence: this.fence,
      attempt: { ...this.row(ask.step), outcome: reconciling ? 'reconciled' : 'succeeded', statusCode: answer.status },
      releaseSlotId: slotId,
    };
    if (ask.storeWithResult) this.handedOff = success;
    else await this.storeSuccess(success, ask.step);
  }

  /**
   * The step's last statement: result and outbox rows, fenced by the attempt number (a stale
   * attempt that finishes after a newer one wrote its result changes nothing), with the span,
   * the lease's end, a handed-off effect success, and a `fenced` row if refused.
   */
  async complete(result: unknown, notification?: { kind: string; payload: Record<string, unknown> }): Promise<boolean> {
    const effect = this.handedOff;
    this.handedOff = undefined;
    const { jobId, effectScope } = this.of.args;
    const { landed, effectStored, woken } = await this.deps.store.writeResult({
      jobId,
      attempt: this.attempt,
      result,
      notificationState: notification ? 'pending' : null,
      outbox: notification && {
        jobId,
        kind: notification.kind,
        payload: notification.payload,
        effectKey: effectKeyFor(effectScope ?? jobId, `notify-${notification.kind}`),
        deliverWithinMs: 15 * 60_000,
      },
      span: { ms: this.spanMs(), attemptStartedAt: this.startedAt },
      lease: this.of.lease?.key,
      refused: { ...this.row('result'), outcome: 'fenced', errorClass: 'stale_attempt' },
      effect,
    });
    this.phase = 'completed';
    this.spanRecorded = true;
    if (this.of.lease) this.of.lease.ended = true;
    this.deps.env.wake(woken);
    if (effect && !effectStored) this.warnStale(effect.effectKey, effect.attempt?.step ?? 'result');
    if (!landed)
      this.deps.log.warn({ jobId, attempt: this.attempt }, 'fenced result write refused: a newer attempt already stored its result');
    return landed;
  }

  /**
   * A wait (no slot, not admitted) goes back to the workflow, as a `StepWait` when it reads
   * them; anything else is classified once (activities/attempt-failure.ts), its row recorded
   * and, when retryable, the job marked `retrying` (fenced). A cancelled attempt records
   * nothing, except at a worker's shutdown deadline: that attempt ends here and retries at once.
   */
  async fail(err: unknown): Promise<StepWait> {
    this.phase = 'failed';
    const { args } = this.of;
    const wait = waitOf(err, args, this.attempt);
    if (wait) return wait;
    const cancel = this.deps.env.cancellation();
    if (err instanceof CancelledFailure || cancel.cancelled) {
      if (!cancel.workerShutdown) throw err;
      err = new RetryableError('the worker shut down before this attempt finished', { errorClass: 'worker_shutdown' }, { cause: err });
    }
    const { env, store, log } = this.deps;
    // A local activity's step counts its attempts in Postgres: a takeover does not reset the cap.
    const raw = Math.max(env.scheduleAttempt, this.schedule);
    const v = decideFailure(err, {
      jobId: this.jobId,
      step: this.of.step,
      budget: this.of.budget ?? DEFAULT_BUDGET,
      startedAt: this.startedAt,
      attempt: raw + (args.slotWait?.attemptOffset ?? 0),
      raw,
      maximumAttempts: env.maximumAttempts,
      deadlineMs: env.deadlineMs,
      now: Date.now(),
    });
    const at = {
      jobId: this.jobId,
      step: this.of.step,
      attempt: v.record.attempt,
      errorClass: v.record.errorClass,
      statusCode: v.record.statusCode,
    };
    // Recording is evidence, not control flow: a failed insert (Postgres down) must not mask the real error.
    await store.recordAttempt(v.record).catch((e: Error) => log.warn({ jobId: this.jobId, err: e.message }, 'could not record attempt'));
    if (v.kind === 'stop') {
      log.warn(at, v.why);
      throw v.failure;
    }
    const marked = await store.markRetrying(this.jobId, v.record.attempt, v.error, v.nextAttemptAt, this.fence).catch(() => undefined);
    if (marked === false) log.warn(at, 'stale attempt: a newer attempt superseded it; its status write was refused');
    log.info({ ...at, delayMs: v.delayMs }, 'attempt failed; retrying');
    throw v.failure;
  }

  /** The attempt's end, whichever way: a handed-off success committed, the span added, a local lease ended. */
  private async settle(outcome: 'completed' | 'failed' | 'cancelled'): Promise<void> {
    const { store, log } = this.deps;
    if (outcome === 'completed') await this.storeHandedOff();
    else
      await this.storeHandedOff().catch((e: Error) =>
        log.warn({ jobId: this.jobId, err: e.message }, 'could not store the effect before the failure; the next attempt reconciles it'),
      );
    // Execution time is this span, slot waits excluded; back-offs fall between spans.
    if (this.phase !== 'new' && this.phase !== 'started' && !this.spanRecorded) {
      this.spanRecorded = true;
      await store
        .addSpan(this.jobId, this.spanMs(), this.startedAt)
        .catch((e: Error) => log.warn({ jobId: this.jobId, err: e.message }, 'could not record execution time'));
    }
    const lease = this.of.lease;
    if (!this.of.local || !lease?.started || lease.ended || lease.key.attempt === 0) return;
    lease.ended = true;
    await store
      .endLease(lease.key, outcome)
      .catch((e: Error) => log.warn({ jobId: this.jobId, err: e.message }, 'could not record lease evidence'));
  }

  /** A local activity's attempt takes the number its lease row got (`numberLocal`): it fences every later write. */
  private async numberLocal(lease: LeaseScope, n: number | null): Promise<void> {
    this.schedule = await numberLocal(this.deps, lease, n, this.of.step, this.of.args.slotWait?.attemptOffset ?? 0);
  }

  /** One setting read per attempt: the one its first statement made. */
  private fallbackPlan(): FallbackPlan | undefined {
    if (!this.of.declaresFallback || !this.first || !this.of.args.jobType) return undefined;
    return planFrom(this.first.setting, this.of.args.jobType, true);
  }

  private slotOwner(step: string) {
    const { jobId, jobType, tenantId } = this.of.args;
    return { jobId, jobType: jobType ?? '', tenantId, holder: `${jobId}:${step}#${this.attempt}` };
  }

  private row(step: string) {
    return { jobId: this.jobId, step, attempt: this.attempt, startedAt: this.startedAt };
  }

  private spanMs(): number {
    return Date.now() - this.startedAt.getTime() - this.waitedMs;
  }

  /** Commits a handed-off success on its own, before anything else of the attempt (another effect, its outcome, its failure). */
  private async storeHandedOff(): Promise<void> {
    const e = this.handedOff;
    if (!e) return;
    this.handedOff = undefined;
    await this.storeSuccess(e, e.attempt?.step ?? this.of.step);
  }

  private async storeSuccess(e: EffectSuccess, step: string): Promise<void> {
    const { stored, woken } = await this.deps.store.storeSuccess(e);
    this.deps.env.wake(woken);
    if (!stored) this.warnStale(e.effectKey, step);
  }

  private async releaseSlot(id: string): Promise<void> {
    await this.deps.store.releaseSlot(id).then(
      (woken) => this.deps.env.wake(woken),
      (e: Error) => this.deps.log.warn({ jobId: this.jobId, err: e.message }, 'could not release slot; it expires by itself'),
    );
  }

  /** A success whose effect-row write the fence refused (the attempt and slot rows are written anyway). */
  private warnStale(effectKey: string, step: string): void {
    this.deps.log.warn(
      { jobId: this.jobId, effectKey, step, attempt: this.attempt },
      'stale attempt: a newer attempt superseded it; its effect-row write was refused',
    );
  }
}
