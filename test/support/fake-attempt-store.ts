/**
 * An in-memory `AttemptStore` (store/step-attempt.ts) for unit tests of the step attempt's
 * transitions (activities/step-attempt.ts): pure logic, no Postgres. It keeps only what the
 * transitions decide on: the job's status, the effect rows, the attempt rows, the slot leases
 * and the fence (the newest schedule attempt that started). The SQL itself is tested by the
 * integration tests against the real Postgres.
 */
import type { AttemptEnv } from '../../activities/step-attempt.js';
import type { Provider } from '../../activities/provider.js';
import type { AttemptFence, AttemptRecord, AttemptStore, ClaimedEffectRow, EffectSuccess } from '../../store/step-attempt.js';
import type { DegradationSetting } from '../../store/degradation.js';

export interface FakeEffect {
  state: 'pending' | 'succeeded' | 'failed';
  inDoubt: boolean;
  attempts: number;
  reconciliations: number;
  providerId: string | null;
  providerRequestId: string | null;
  result: unknown;
  upstream: 'primary' | 'fallback';
}

export class FakeAttemptStore implements AttemptStore {
  status = 'queued';
  admitted = true;
  input: unknown = { text: 'hello' };
  /** The newest schedule attempt that started: an older one's fenced writes are refused. */
  newest = 0;
  effects = new Map<string, FakeEffect>();
  rows: AttemptRecord[] = [];
  /** Slot leases held now, and how many a call may hold at once. */
  slots = new Set<string>();
  slotCap = 1;
  nextSlot = 1;
  renewed = new Set<string>();
  waiters = new Set<string>();
  retrying: Array<{ attempt: number; errorClass: string }> = [];
  spans: number[] = [];
  results: unknown[] = [];
  /** Every call, in order, by name: the transitions' statements. */
  log: string[] = [];

  private fenced(f: AttemptFence | undefined): boolean {
    return f !== undefined && f.attempt < this.newest;
  }

  start: AttemptStore['start'] = async (_jobId, attempt, fence) => {
    this.log.push('start');
    if (!this.admitted) return this.started(false, attempt);
    if (fence) this.newest = Math.max(this.newest, fence.attempt);
    const marked = !this.fenced(fence);
    if (marked) this.status = 'running';
    return this.started(marked, attempt ?? ++this.newest);
  };

  private started(admitted: boolean, attempt: number | null) {
    const setting = { fallbackJobTypes: [], fallbackSince: {} } as unknown as DegradationSetting;
    return { marked: admitted, found: true, input: undefined, setting, attempt, admitted, commitMode: 'on' };
  }

  setting = async () => ({ fallbackJobTypes: [], fallbackSince: {} }) as unknown as DegradationSetting;
  loadInput = async () => (this.log.push('loadInput'), this.input);
  markRunning = async (_j: string, _a: number, f?: AttemptFence) => (this.log.push('markRunning'), !this.fenced(f));
  markWaiting = async (_j: string, _r: string, f?: AttemptFence) => {
    this.log.push('markWaiting');
    if (!this.fenced(f)) this.status = 'queued';
    return !this.fenced(f);
  };
  markRetrying: AttemptStore['markRetrying'] = async (_j, attempt, error, _next, f) => {
    this.log.push('markRetrying');
    if (this.fenced(f)) return false;
    this.status = 'retrying';
    this.retrying.push({ attempt, errorClass: error.errorClass });
    return true;
  };
  addSpan = async (_j: string, ms: number) => void (this.log.push('addSpan'), this.spans.push(ms));
  recordAttempt = async (a: AttemptRecord) => void (this.log.push(`row:${a.outcome}`), this.rows.push(a));
  recordLost = async () => false;
  endLease = async () => void this.log.push('endLease');

  claimEffect: AttemptStore['claimEffect'] = async (e, fence, claim) => {
    this.log.push('claimEffect');
    if (this.fenced(fence)) return undefined;
    const before = this.effects.get(e.effectKey);
    const row: FakeEffect = before ?? {
      state: 'pending',
      inDoubt: false,
      attempts: 0,
      reconciliations: 0,
      providerId: null,
      providerRequestId: null,
      result: null,
      upstream: claim.upstream?.upstream ?? 'primary',
    };
    const wasInDoubt = before?.inDoubt ?? false;
    row.attempts += 1;
    row.inDoubt = row.state === 'pending';
    this.effects.set(e.effectKey, row);
    const afresh = row.state === 'pending' && (!before || !wasInDoubt);
    const slotId = claim.slot && afresh ? this.takeSlot() : null;
    return this.claimed(e.effectKey, row, !before, wasInDoubt, slotId);
  };

  private claimed(key: string, r: FakeEffect, inserted: boolean, wasInDoubt: boolean, slotId: string | null): ClaimedEffectRow {
    return {
      effect_key: key,
      job_id: 'job',
      step: 'step',
      state: r.state,
      request_hash: 'h',
      provider_request_id: r.providerRequestId,
      provider_id: r.providerId,
      result: r.result,
      attempts: r.attempts,
      reconciliations: r.reconciliations,
      upstream: r.upstream,
      inserted,
      was_in_doubt: wasInDoubt,
      slot_id: slotId,
    };
  }

  private takeSlot(): string | null {
    if (this.slots.size >= this.slotCap) return null;
    const id = `slot-${this.nextSlot++}`;
    this.slots.add(id);
    return id;
  }

  reopen: AttemptStore['reopen'] = async (key, plan) => {
    this.log.push('reopen');
    const e = this.effects.get(key)!;
    if (plan.reopen && e.state === 'failed') Object.assign(e, { state: 'pending', inDoubt: false });
    if (plan.reconcile) e.reconciliations += 1;
  };
  storeSuccess: AttemptStore['storeSuccess'] = async (s: EffectSuccess) => {
    this.log.push('storeSuccess');
    if (s.attempt) this.rows.push(s.attempt);
    if (s.releaseSlotId) this.slots.delete(s.releaseSlotId);
    if (this.fenced(s.fence)) return { stored: false, woken: null };
    const e = this.effects.get(s.effectKey)!;
    Object.assign(e, {
      state: 'succeeded',
      inDoubt: false,
      providerId: s.providerId,
      providerRequestId: s.providerRequestId,
      result: s.result,
    });
    return { stored: true, woken: null };
  };
  storeLookedUp: AttemptStore['storeLookedUp'] = async (key, f) => {
    this.log.push('storeLookedUp');
    Object.assign(this.effects.get(key)!, { state: 'succeeded', inDoubt: false, ...f, result: f.response });
  };
  failEffect = async (key: string) =>
    void (this.log.push('failEffect'), Object.assign(this.effects.get(key)!, { state: 'failed', inDoubt: false }));
  clearDoubt = async (key: string) => void (this.log.push('clearDoubt'), (this.effects.get(key)!.inDoubt = false));
  withdrawClaim = async (key: string, created: boolean) => {
    this.log.push('withdrawClaim');
    if (created) this.effects.delete(key);
    else this.effects.get(key)!.inDoubt = false;
  };
  tryAcquireSlot = async () => (this.log.push('tryAcquireSlot'), this.takeSlot());
  releaseSlot = async (id: string) => (this.log.push('releaseSlot'), this.slots.delete(id), null);
  registerWaiter = async (w: { jobId: string }) => void (this.log.push('registerWaiter'), this.waiters.add(w.jobId));
  forgetWaiter = async (jobId: string) => void (this.log.push('forgetWaiter'), this.waiters.delete(jobId));
  renewing = (id: string) => {
    this.renewed.add(id);
    return () => this.renewed.delete(id);
  };
  writeResult: AttemptStore['writeResult'] = async (w) => {
    this.log.push('writeResult');
    let effectStored = false;
    if (w.effect) effectStored = (await this.storeSuccess(w.effect)).stored;
    const landed = w.attempt >= this.newest && this.status !== 'succeeded';
    if (landed) {
      this.status = 'succeeded';
      this.results.push(w.result);
    } else if (w.refused) this.rows.push(w.refused);
    return { landed, effectStored, woken: null };
  };
}

/** A Temporal stand-in: the schedule's attempt, an activity identity for the fence, no real waits. */
export function fakeEnv(o: Partial<AttemptEnv> = {}): AttemptEnv & { woken: string[] } {
  const woken: string[] = [];
  return {
    scheduleAttempt: 1,
    activity: { workflowId: 'job-1', runId: 'run-1', activityId: '1' },
    maximumAttempts: 5,
    deadlineMs: undefined,
    signal: new AbortController().signal,
    sleep: async () => undefined,
    heartbeat: (fn) => fn(),
    cancellation: () => ({ cancelled: false, workerShutdown: false }),
    wake: (jobId) => void (jobId && woken.push(jobId)),
    woken,
    ...o,
  };
}

/** A provider (the simulator's dialect) that answers from a script: a body, or an error to throw. */
export function scriptedProvider(answers: Array<Record<string, unknown> | Error>): Provider & { calls: number } {
  const p = Object.assign(
    async () => {
      const a = answers[Math.min(p.calls++, answers.length - 1)]!;
      if (a instanceof Error) throw a;
      return { status: 200, body: a, requestId: `req-${p.calls}` };
    },
    { calls: 0, upstreamName: 'sim' },
  );
  return p as unknown as Provider & { calls: number };
}
