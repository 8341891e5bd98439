/**
 * The stage verdict of one job: which of the four stages (intake, claim, side effects,
 * completion) it is in or failed at, in words, with the figure that shows it, and the next
 * expected step. Pure: the facts come from Postgres and Temporal (services/timeline.ts), so
 * every verdict is unit-tested without either.
 */
import type { JobState } from '../contract/job-types.js';
import { isNonRetryable } from './failure-reason.js';

export type Stage = 'intake' | 'claim' | 'side_effects' | 'completion';
export const STAGE_WORDS: Record<Stage, string> = {
  intake: 'intake',
  claim: 'claim',
  side_effects: 'side effects',
  completion: 'completion',
};

export type StageCondition = 'waiting' | 'stuck' | 'running' | 'in_doubt' | 'retrying' | 'failed' | 'done' | 'cancelled';

export interface StageFacts {
  now: Date;
  /** The job's type: named when no worker polls its queue (a worker runs only the types it is given). */
  jobType?: string;
  status: JobState;
  statusReason: string | null;
  createdAt: Date;
  workflowStartedAt: Date | null;
  firstStartedAt: Date | null;
  finishedAt: Date | null;
  deferredAt: Date | null;
  nextAttemptAt: Date | null;
  /** A delayed job's start time (`runAt` / `delaySeconds`); absent or null: at once. */
  runAt?: Date | null;
  attempts: number;
  lastError: { errorClass: string; message?: string; statusCode?: number } | null;
  /** Operators only: Temporal's view of the job's task queue (DescribeTaskQueue pollers). */
  taskQueue?: { name: string; workflowPollers: number | null; activityPollers: number | null; note?: string };
  /** The newest step effect that has not succeeded (notifications excluded). */
  pendingEffect?: { step: string; state: 'pending' | 'failed'; inDoubt: boolean; sentAt: Date; reconciliations: number } | null;
  notification: { state: string | null; failures: number; pending: number };
  deadLetter?: {
    id: string;
    state: string;
    failedStep: string | null;
    /** The attempts of all its steps (charge once + receipt once = 2); `attempts` above is the job's highest. */
    attempts: number;
    /** Temporal's retry state when it stopped: `NON_RETRYABLE_FAILURE` means nothing was retried after the failure. */
    retryState?: string | null;
    discardReason: string | null;
    discardedBy?: string | null;
  } | null;
  /**
   * Temporal's view when the workflow's newest task failed and none completed since: the
   * engine cannot run the workflow code (an unknown workflow type on that worker, a
   * non-deterministic deploy, a bundle error). `attempt` counts the failures so far.
   */
  workflowTaskFailure?: {
    message: string;
    identity: string | null;
    attempt: number;
    workflowType: string | null;
    /** The build ID the failing worker reported with the failure, when it did. */
    buildId?: string | null;
  } | null;
  /**
   * Temporal's view when one of the workflow's activities is paused (`temporal activity pause`,
   * the Web UI, `pauseActivity`): no attempt runs until someone unpauses it. `by` is the identity
   * that paused it (or the rule), `since` when.
   */
  pausedActivity?: { activityType: string; since: Date | null; by: string | null; reason: string | null; attempt: number } | null;
  /** The newest replay job of this job, if it was replayed. */
  replay?: { jobId: string; status: string } | null;
}

export interface StageVerdict {
  stage: Stage;
  condition: StageCondition;
  /** One line: the stage, what is wrong or happening, and the figure. */
  words: string;
  /** The figure alone (a duration, a count, an HTTP status, a time). */
  figure: string;
  nextStep: string;
}

/** `12:03:04Z` today (UTC), else the full date and time, never milliseconds. */
export function clock(d: Date, now: Date): string {
  const iso = d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return iso.slice(0, 10) === now.toISOString().slice(0, 10) ? iso.slice(11) : iso;
}

/** `850 ms`, `12 s`, `4 min`, `3 h 5 min`, `2 d`. */
export function duration(ms: number): string {
  const v = Math.max(0, ms);
  if (v < 1_000) return `${Math.round(v)} ms`;
  const s = Math.round(v / 1_000);
  if (s < 120) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
  return `${Math.round(h / 24)} d`;
}

const since = (d: Date | null, now: Date) => duration(now.getTime() - (d ?? now).getTime());
const http = (e: StageFacts['lastError']) => (e?.statusCode ? ` (HTTP ${e.statusCode})` : '');
const times = (n: number) => (n === 1 ? 'once' : `${n} times`);

function failedVerdict(f: StageFacts): StageVerdict {
  const stage: Stage = f.firstStartedAt ? 'side_effects' : 'claim';
  const e = f.lastError;
  const dl = f.deadLetter;
  const step = dl?.failedStep ? `${dl.failedStep} ` : '';
  const refused = e?.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500 && ![408, 425, 429].includes(e.statusCode);
  // The job's highest attempt of any step, as GET /v1/jobs shows it (the dead letter's figure adds every step's).
  const n = Math.max(1, f.attempts);
  const figure = refused ? `HTTP ${e!.statusCode}` : `${n} attempt${n === 1 ? '' : 's'}`;
  const what = refused
    ? `${step}refused with HTTP ${e!.statusCode} (${e!.errorClass}), not retried`
    : // (A non-retryable failure on a later attempt, such as the step's spent retry budget, did give up after retries.)
      n === 1 && isNonRetryable(dl?.retryState)
      ? `${step}failed on the first attempt, not retried: ${e?.errorClass ?? 'unknown error'}${http(e)}`
      : `${step}gave up after ${n} attempt${n === 1 ? '' : 's'}: ${e?.errorClass ?? 'unknown error'}${http(e)}`;
  let tail = dl ? `; dead letter ${dl.id} ${dl.state}` : '';
  let nextStep = 'an operator replays the dead letter once the cause is fixed, or discards it with a reason';
  if (dl?.state === 'replaying' && f.replay) {
    tail = `; dead letter ${dl.id} replaying as ${f.replay.jobId} (${f.replay.status})`;
    nextStep = `the replay job ${f.replay.jobId} finishes`;
  } else if (dl?.state === 'replayed' && f.replay) {
    tail = `; replayed as ${f.replay.jobId} (${f.replay.status})`;
    nextStep = `none: the replay job ${f.replay.jobId} took over this job`;
  } else if (dl?.state === 'discarded') {
    tail = `; dead letter ${dl.id} discarded${dl.discardedBy ? ` by ${dl.discardedBy}` : ''}${dl.discardReason ? `: ${dl.discardReason}` : ''}`;
    nextStep = 'none: the dead letter was discarded';
  } else if (!dl) {
    nextStep = 'the dead letter is recorded; then an operator replays or discards it';
  }
  return { stage, condition: 'failed', words: `failed at ${STAGE_WORDS[stage]}: ${what}${tail}`, figure, nextStep };
}

function completedVerdict(f: StageFacts): StageVerdict {
  const n = f.notification;
  const at = f.finishedAt ? ` ${clock(f.finishedAt, f.now)}` : '';
  if (n.state === 'failed') {
    return {
      stage: 'completion',
      condition: 'failed',
      words: `completed${at}; notification failed ${times(n.failures)} (outbox)`,
      figure: `${n.failures} failed deliveries`,
      nextStep:
        n.pending > 0
          ? 'the compensation scan re-delivers the pending outbox row once its deadline passes'
          : 'none: the result is stored; the notification was given up',
    };
  }
  if (n.state === 'pending' || n.pending > 0) {
    return {
      stage: 'completion',
      condition: n.failures > 0 ? 'retrying' : 'running',
      words: `completed${at}; notification pending (outbox)${n.failures > 0 ? `, failed ${times(n.failures)} so far` : ''}`,
      figure: `${n.failures} failed deliveries`,
      nextStep: 'the notification is delivered from the outbox',
    };
  }
  return {
    stage: 'completion',
    condition: 'done',
    words: `completed${at}${n.state === 'sent' ? '; notification sent' : ''}`,
    figure: f.finishedAt ? clock(f.finishedAt, f.now) : 'done',
    nextStep: 'none: the job is done',
  };
}

/** The later of two times, either may be missing. */
const later = (a: Date | null, b: Date | null | undefined): Date | null => (a && b ? (a > b ? a : b) : (a ?? b ?? null));

/**
 * Which kind of worker nobody runs on a task queue, from Temporal's pollers of it: `null` while
 * both kinds poll (or Temporal did not say). The claim verdict and the tenant's status
 * (services/job-engine.ts) name it the same way.
 */
export function missingPoller(
  q: Pick<NonNullable<StageFacts['taskQueue']>, 'workflowPollers' | 'activityPollers'> | undefined,
): 'worker' | 'workflow worker' | 'activity worker' | null {
  if (!q || (q.activityPollers !== 0 && q.workflowPollers !== 0)) return null;
  return q.workflowPollers === 0 && q.activityPollers === 0 ? 'worker' : q.workflowPollers === 0 ? 'workflow worker' : 'activity worker';
}

function claimVerdict(f: StageFacts): StageVerdict {
  // A delayed job waits for a worker from its time on, not from its workflow's creation.
  const waitingSince = later(f.workflowStartedAt ?? f.createdAt, f.runAt)!;
  const waited = since(waitingSince, f.now);
  const q = f.taskQueue;
  const kind = missingPoller(q);
  if (q && kind) {
    const forType = f.jobType ? ` for job type ${f.jobType}` : '';
    return {
      stage: 'claim',
      condition: 'stuck',
      words: `stuck at claim: no ${kind} has polled task queue ${q.name}${forType} in ${waited}`,
      figure: `0 pollers, ${waited}`,
      nextStep: f.jobType
        ? `start a worker given job type ${f.jobType} (durable-jobs worker --jobs <module with it>): it polls task queue ${q.name}; the job waits in Temporal and runs when one polls`
        : `start a worker on task queue ${q.name}; the job waits in Temporal and runs when one polls`,
    };
  }
  const pollers = q?.activityPollers ? ` (${q.activityPollers} worker(s) polling ${q.name})` : '';
  return {
    stage: 'claim',
    condition: 'waiting',
    words: `waiting at claim: queued for ${waited}, no attempt started yet${pollers}`,
    figure: waited,
    nextStep: 'a worker picks up the first attempt',
  };
}

function sideEffectVerdict(f: StageFacts): StageVerdict {
  const e = f.pendingEffect;
  if (f.status === 'queued' && f.statusReason) {
    return {
      stage: 'side_effects',
      condition: 'waiting',
      words: `waiting at side effects: ${f.statusReason}`,
      figure: f.statusReason,
      nextStep: 'the step calls the upstream when a slot frees',
    };
  }
  if (e && e.state === 'pending' && e.inDoubt) {
    const sent = clock(e.sentAt, f.now);
    if (f.status === 'retrying') {
      return {
        stage: 'side_effects',
        condition: 'in_doubt',
        words: `side effect in doubt: ${e.step} sent ${sent}, no answer; reconciliation pending${f.nextAttemptAt ? ` (next attempt ${clock(f.nextAttemptAt, f.now)})` : ''}`,
        figure: `sent ${sent}`,
        nextStep: `the next attempt reconciles ${e.step}: it asks again with the same effect key, the upstream answers with its first response`,
      };
    }
    return {
      stage: 'side_effects',
      condition: 'in_doubt',
      words: `side effect in doubt: ${e.step} sent ${sent}, no answer for ${since(e.sentAt, f.now)} (attempt ${f.attempts} waiting)`,
      figure: since(e.sentAt, f.now),
      nextStep: `the upstream answers; if the attempt times out, the next attempt reconciles ${e.step} with the same effect key`,
    };
  }
  if (f.status === 'retrying') {
    const e2 = f.lastError;
    const next = f.nextAttemptAt ? clock(f.nextAttemptAt, f.now) : 'soon';
    return {
      stage: 'side_effects',
      condition: 'retrying',
      words: `retrying at side effects: attempt ${f.attempts} failed with ${e2?.errorClass ?? 'an error'}${http(e2)}; next attempt ${next}`,
      figure: `attempt ${f.attempts}${http(e2)}`,
      nextStep: `attempt ${f.attempts + 1} at ${next}`,
    };
  }
  return {
    stage: 'side_effects',
    condition: 'running',
    words: `running at side effects: attempt ${f.attempts} since ${clock(f.firstStartedAt!, f.now)}`,
    figure: since(f.firstStartedAt, f.now),
    nextStep: 'the step finishes and its result is written (fenced)',
  };
}

/**
 * How long an intent may lack its "workflow started" mark before the verdict calls it stuck:
 * the intake writes marks in batches (`INTAKE_START_MARK_MS`, default 100 ms), so a fresh
 * job's mark is normally moments away.
 */
export const START_MARK_GRACE_MS = 10_000;

export function stageVerdict(f: StageFacts): StageVerdict {
  if (f.status === 'cancelled') {
    const stage: Stage = f.firstStartedAt ? 'side_effects' : f.workflowStartedAt ? 'claim' : 'intake';
    const at = f.finishedAt ? clock(f.finishedAt, f.now) : '';
    return {
      stage,
      condition: 'cancelled',
      words: `cancelled at ${STAGE_WORDS[stage]} on request${at ? ` ${at}` : ''}`,
      figure: at || 'cancelled',
      nextStep: 'none: the job was cancelled',
    };
  }
  if (f.status === 'dead_lettered') return failedVerdict(f);
  if (f.status === 'succeeded') return completedVerdict(f);
  // Delayed and its time not come (the API's `scheduled`): nothing is late, whatever its age.
  if (f.status === 'queued' && !f.firstStartedAt && f.runAt && f.runAt > f.now) {
    const left = duration(f.runAt.getTime() - f.now.getTime());
    return {
      stage: 'claim',
      condition: 'waiting',
      words: `scheduled for ${clock(f.runAt, f.now)} (in ${left}), not started before then`,
      figure: `in ${left}`,
      nextStep: `Temporal starts its workflow at ${clock(f.runAt, f.now)} (its start delay); cancel it before then and it never runs`,
    };
  }
  // Any state past `queued`, or an attempt, was written by the running workflow: a missing
  // mark then only says the intake's mark was lost (the scan writes it).
  if (!f.workflowStartedAt && !f.firstStartedAt && f.status === 'queued') {
    const waited = since(f.createdAt, f.now);
    if (f.now.getTime() - f.createdAt.getTime() < START_MARK_GRACE_MS)
      return {
        stage: 'intake',
        condition: 'waiting',
        words: `at intake: accepted ${clock(f.createdAt, f.now)}, its workflow start not recorded yet (${waited})`,
        figure: waited,
        nextStep: 'the intake records the workflow start within moments',
      };
    return {
      stage: 'intake',
      condition: 'stuck',
      words: `stuck at intake: accepted ${clock(f.createdAt, f.now)}, its workflow not started for ${waited}`,
      figure: waited,
      nextStep: 'the compensation scan starts the workflow of an accepted intent',
    };
  }
  if (f.status === 'deferred') {
    const d = since(f.deferredAt, f.now);
    return {
      stage: 'claim',
      condition: 'waiting',
      words: `deferred at claim for ${d}: ${f.statusReason ?? 'its priority is paused'}`,
      figure: d,
      nextStep: 'admitted once its priority is resumed, at the recovery rate',
    };
  }
  if (f.workflowTaskFailure) return workflowTaskVerdict(f, f.workflowTaskFailure);
  if (f.pausedActivity) return pausedActivityVerdict(f, f.pausedActivity);
  if (!f.firstStartedAt) return claimVerdict(f);
  return sideEffectVerdict(f);
}

/** An activity of the job is paused in Temporal: its next attempt waits for someone to unpause it. */
function pausedActivityVerdict(f: StageFacts, a: NonNullable<StageFacts['pausedActivity']>): StageVerdict {
  const stage: Stage = f.firstStartedAt ? 'side_effects' : 'claim';
  const since = a.since ? ` since ${clock(a.since, f.now)}` : '';
  const by = a.by ? ` by ${a.by}` : '';
  return {
    stage,
    condition: 'waiting',
    words: `paused at ${STAGE_WORDS[stage]}: activity ${a.activityType} is paused in Temporal${by}${since}${a.reason ? ` (${a.reason.slice(0, 200)})` : ''}, attempt ${a.attempt}`,
    figure: a.since ? `paused ${duration(Math.max(0, f.now.getTime() - a.since.getTime()))}` : 'paused',
    nextStep: `unpause it (temporal activity unpause --workflow-id <job ID> --activity-type ${a.activityType}, or the Web UI): its next attempt runs, no attempt was spent while paused`,
  };
}

/** The engine fails the workflow's task: no step can run until a worker that can run its code takes it. */
function workflowTaskVerdict(f: StageFacts, w: NonNullable<StageFacts['workflowTaskFailure']>): StageVerdict {
  const stage: Stage = f.firstStartedAt ? 'side_effects' : 'claim';
  const on = w.identity ? ` on worker ${w.identity}` : '';
  const unknownType = /not (found|registered)|no such function|unknown workflow/i.test(w.message);
  const what = w.workflowType ? `workflow ${w.workflowType}${f.jobType ? ` (job type ${f.jobType})` : ''}` : 'the workflow';
  return {
    stage,
    condition: 'stuck',
    words: `stuck at ${STAGE_WORDS[stage]}: the workflow task of ${what} fails${on}, ${w.attempt} time(s): ${w.message.slice(0, 200)}`,
    figure: `${w.attempt} workflow task failure(s)`,
    nextStep: unknownType
      ? `a worker polls this queue without job type ${f.jobType ?? '?'}: give that worker the type, or put the type on a task queue of its own (defineJob taskQueue) served by the workers that have it`
      : 'the worker cannot replay or run the workflow code (a non-deterministic change or a bundle error): roll back the deploy, or fix the code and deploy again; the job resumes where it stopped',
  };
}

/** Queue wait and execution time of each stage, kept apart (ms; absent where the stage was not reached). */
export interface StageTimings {
  intake: { executionMs?: number };
  claim: { queueMs?: number; deferredMs?: number };
  sideEffects: { queueMs?: number; executionMs?: number };
  completion: { queueMs?: number; executionMs?: number };
}

export interface TimedAttempt {
  step: string;
  startedAt: Date;
  finishedAt: Date;
}

const gap = (a: Date | null | undefined, b: Date | null | undefined) => (a && b ? Math.max(0, b.getTime() - a.getTime()) : undefined);

/**
 * - intake: accepted → workflow started (execution of the intake itself);
 * - claim: queue wait from the workflow start (or the gate's admission) to the first attempt, deferral apart;
 * - side effects: execution = the step attempts' own durations; queue = the rest of the span
 *   (retry delays and waits for a worker between attempts);
 * - completion: the notification attempts the same way, from the result write on.
 */
export function stageTimings(
  f: {
    now: Date;
    createdAt: Date;
    workflowStartedAt: Date | null;
    firstStartedAt: Date | null;
    finishedAt: Date | null;
    deferredAt: Date | null;
    admittedAt: Date | null;
    status: JobState;
    /** A delayed job's time: its claim wait starts there. */
    runAt?: Date | null;
  },
  attempts: TimedAttempt[],
): StageTimings {
  const running = !f.finishedAt;
  const claimFrom = f.admittedAt ?? later(f.workflowStartedAt, f.workflowStartedAt ? f.runAt : null);
  const own = (a: TimedAttempt) => a.finishedAt.getTime() - a.startedAt.getTime();
  const isNotify = (a: TimedAttempt) => a.step === 'notify' || a.step.startsWith('notify-');
  const steps = attempts.filter((a) => !isNotify(a) && a.step !== 'result');
  const notify = attempts.filter(isNotify);
  const t: StageTimings = { intake: {}, claim: {}, sideEffects: {}, completion: {} };
  t.intake.executionMs = gap(f.createdAt, f.workflowStartedAt);
  if (claimFrom && f.status !== 'deferred') t.claim.queueMs = gap(claimFrom, f.firstStartedAt ?? (running ? f.now : f.finishedAt));
  if (f.deferredAt) t.claim.deferredMs = gap(f.deferredAt, f.admittedAt ?? (running ? f.now : f.finishedAt));
  if (f.firstStartedAt) {
    const end = f.finishedAt ?? f.now;
    const exec = steps.reduce((s, a) => s + own(a), 0);
    t.sideEffects.executionMs = exec;
    t.sideEffects.queueMs = Math.max(0, end.getTime() - f.firstStartedAt.getTime() - exec);
  }
  if (f.status === 'succeeded' && f.finishedAt && notify.length > 0) {
    const exec = notify.reduce((s, a) => s + own(a), 0);
    const last = notify.reduce((m, a) => Math.max(m, a.finishedAt.getTime()), 0);
    t.completion.executionMs = exec;
    t.completion.queueMs = Math.max(0, last - f.finishedAt.getTime() - exec);
  }
  return t;
}
