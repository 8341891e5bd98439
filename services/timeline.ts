/**
 * The job timeline: every event of one job, from Postgres (intent, duplicates, admissions,
 * attempts, leases, effects, the result write, outbox, webhooks, dead letter, operator
 * actions, replays) and from its Temporal history, in one UTC order, each with its source;
 * above it the stage verdict (lib/job-stage.ts) and the per-stage queue and execution times.
 * The use case behind `GET /v1/admin/jobs/{jobId}/timeline` and `npm run job -- timeline`.
 * Never the job's input, a result body, a payload, a key or a secret.
 */
import type pg from 'pg';
import { NotFoundError } from '../lib/errors.js';
import { duration, stageTimings, stageVerdict, type StageFacts } from '../lib/job-stage.js';
import type { IntentRow } from '../store/intents.js';
import { holdingScope, type PauseScope } from '../store/degradation.js';
import * as q from '../store/timeline.js';
import { jobActionsOf } from '../store/reruns.js';
import { taskQueueHealth } from './queue-health.js';
import { visibleState } from './job-status.js';
import { iso, temporalSide } from './timeline-temporal.js';
import type { JobTimeline, TimelineDeps, TimelineEvent } from './timeline-types.js';

import { findJobTrace } from '../store/job-traces.js';
import { traceUrl } from '../lib/tracing.js';
export type { EventSource, JobTimeline, TimelineDeps, TimelineEvent } from './timeline-types.js';

const pausedOf = (s: { pausedPriorities?: string[] } | undefined) => s?.pausedPriorities ?? [];
/** The pause of a type, tenant or pair in a setting that holds the job, if any (issue 38 §4). */
const scopeOf = (s: { pausedScopes?: PauseScope[] } | undefined, job: { tenant_id: string; job_type: string }) =>
  holdingScope(s?.pausedScopes ?? [], { tenantId: job.tenant_id, jobType: job.job_type });
const scopeWords = (p: PauseScope) =>
  p.tenantId !== undefined && p.jobType !== undefined
    ? `${p.jobType} jobs of tenant ${p.tenantId}`
    : p.jobType !== undefined
      ? `job type ${p.jobType}`
      : `tenant ${p.tenantId}`;

async function postgresEvents(
  pool: pg.Pool,
  job: q.TimelineIntent,
): Promise<{
  events: TimelineEvent[];
  facts: Omit<StageFacts, 'now' | 'taskQueue'>;
  attempts: q.TimelineAttempt[];
  duplicates: Date[];
  lineage: JobTimeline['lineage'];
}> {
  const scope = job.replay_of ?? job.job_id;
  const [duplicates, attempts, leases, effects, outbox, deadLetters, replays, admissions, audit, jobActions] = await Promise.all([
    q.duplicatesOf(pool, job.job_id),
    q.attemptsOf(pool, job.job_id),
    q.leasesOf(pool, job.job_id),
    q.effectsOf(pool, scope),
    q.outboxOf(pool, job.job_id),
    q.deadLettersOf(pool, job.job_id),
    q.replayJobsOf(pool, job.job_id),
    q.admissionsOf(pool, job.job_id),
    q.degradationChangesBetween(pool, job.created_at, job.finished_at),
    jobActionsOf(pool, job.job_id),
  ]);
  const providerIds = effects.map((e) => e.provider_id).filter((x): x is string => !!x);
  const [deliveries, actions] = await Promise.all([
    q.deliveriesOf(pool, job.job_id, providerIds),
    q.actionsOf(pool, [...new Set([...deadLetters.map((d) => d.id), ...(job.dead_letter_id ? [job.dead_letter_id] : [])])]),
  ]);
  const ev: TimelineEvent[] = [];
  const add = (at: Date | null, from: string, event: string, detail?: string) => {
    if (at) ev.push({ at: iso(at), source: 'postgres', kind: from, event, ...(detail ? { detail } : {}) });
  };

  add(
    job.created_at,
    'job_intents',
    'intent accepted',
    `${job.job_type}, ${job.priority} priority, tenant ${job.tenant_id}${job.replay_of ? `; replay of ${job.replay_of}` : ''}`,
  );
  duplicates.forEach((d, i) =>
    add(
      d,
      'intent_duplicates',
      `duplicate submission #${i + 1}`,
      'same tenant and Idempotency-Key: answered with this job, nothing started',
    ),
  );
  add(job.workflow_started_at, 'job_intents', 'workflow start recorded');
  // Degradation changes of the job's priority: the last one before it was accepted (the pause it met) and those after.
  const mine = audit.filter((a) => pausedOf(a.before).includes(job.priority) !== pausedOf(a.after).includes(job.priority));
  const before = mine.filter((a) => a.at < job.created_at).at(-1);
  for (const a of mine.filter((x) => x.at >= job.created_at || x === before)) {
    const paused = pausedOf(a.after).includes(job.priority);
    add(
      a.at,
      'degradation_audit',
      `${job.priority} priority ${paused ? 'paused' : 'resumed'} by ${a.actor}`,
      `${a.reason ? `reason: ${a.reason}; ` : ''}recovery ${a.after.recoveryRatePerMinute ?? '?'}/min`,
    );
  }
  // Pauses of its type, its tenant or the pair (operator-facing: who and why).
  const scoped = audit.filter((a) => !!scopeOf(a.before, job) !== !!scopeOf(a.after, job));
  const scopedBefore = scoped.filter((a) => a.at < job.created_at).at(-1);
  for (const a of scoped.filter((x) => x.at >= job.created_at || x === scopedBefore)) {
    const now = scopeOf(a.after, job);
    const p = (now ?? scopeOf(a.before, job))!;
    add(
      a.at,
      'degradation_audit',
      `${scopeWords(p)} ${now ? 'paused' : 'resumed'} by ${a.actor}`,
      a.reason ? `reason: ${a.reason}` : undefined,
    );
  }
  if (job.deferred_at)
    add(
      job.deferred_at,
      'job_intents',
      'deferred',
      job.status === 'deferred'
        ? (job.status_reason ?? undefined)
        : "held back by the degradation gate (reasons: the gate's decisions in the Temporal events)",
    );
  for (const a of admissions) {
    add(a.reserved_at, 'admissions', `admission slot reserved (round ${a.round})`, `slot at ${iso(a.slot_at)}`);
    add(a.admitted_at, 'admissions', 'admitted by the ramp', `round ${a.round}`);
  }
  // A delayed job's time, as an event at that time (in the future while it is `scheduled`).
  if (job.run_at) add(job.run_at, 'job_intents', 'scheduled start', 'its workflow starts (Temporal start delay)');
  add(job.admitted_at, 'job_intents', 'admitted after deferral');
  add(job.first_started_at, 'job_intents', 'first attempt started', 'queue time ends, execution time begins');
  // The latest progress a step reported (only the latest is kept: ctx.progress, at most once a second).
  if (job.progress && job.progress_at)
    add(
      job.progress_at,
      'job_intents',
      `progress reported by step ${job.progress.step}`,
      `${job.progress.done}${job.progress.total !== undefined ? ` of ${job.progress.total}` : ''}${job.progress.note ? `: ${job.progress.note}` : ''}`,
    );
  if (job.status === 'queued' && job.status_reason && job.first_started_at)
    add(job.updated_at, 'job_intents', 'waiting for an upstream slot', job.status_reason);

  for (const a of attempts) {
    const took = duration(a.finished_at.getTime() - a.started_at.getTime());
    const cls = [a.error_class, a.status_code ? `HTTP ${a.status_code}` : null, upstreamSaid(a)].filter(Boolean).join(', ');
    const delay =
      a.delay_ms !== null
        ? `; retry in ${duration(a.delay_ms)} (${a.delay_source === 'retry-after' ? "the upstream's Retry-After" : a.delay_source === 'jitter' ? 'full jitter' : 'reason not recorded'})`
        : '';
    if (a.outcome === 'fenced')
      add(a.finished_at, 'job_attempts', 'fenced result write refused', `attempt ${a.attempt}: a newer attempt already stored the result`);
    else
      add(
        a.finished_at,
        'job_attempts',
        `attempt ${a.attempt} of ${a.step}: ${a.outcome.replace('_', '-')}`,
        `${cls ? `${cls}; ` : ''}started ${iso(a.started_at)}, took ${took}${delay}`,
      );
  }
  for (const l of leases) {
    if (l.outcome === 'lease_expired')
      add(
        l.expired_detected_at ?? l.deadline_at,
        'activity_leases',
        `lease expired: ${l.activity_type} attempt ${l.attempt}`,
        `started ${iso(l.started_at)}, no outcome recorded (worker died or a timeout fired); run ${l.run_id}`,
      );
  }
  const reusedSteps = new Set(attempts.filter((a) => a.outcome === 'reused').map((a) => a.step));
  for (const e of effects) {
    const ids = [e.provider_id ? `provider ID ${e.provider_id}` : null, e.provider_request_id ? `request ${e.provider_request_id}` : null]
      .filter(Boolean)
      .join(', ');
    add(e.first_attempt_at, 'effects', `effect ${e.effect_key} first sent`, `${e.upstream} upstream`);
    const how = `${e.attempts} attempt(s), ${e.reconciliations} reconciliation(s)${reusedSteps.has(e.step) ? '; reused by a later attempt (no upstream call)' : ''}${scope !== job.job_id ? `; effect of ${scope}, shared by its replays` : ''}`;
    if (e.state === 'succeeded') add(e.updated_at, 'effects', `effect ${e.effect_key} executed`, `${ids ? `${ids}; ` : ''}${how}`);
    else if (e.state === 'failed') add(e.updated_at, 'effects', `effect ${e.effect_key} refused`, `${ids ? `${ids}; ` : ''}${how}`);
    else if (e.in_doubt) add(e.last_attempt_at, 'effects', `effect ${e.effect_key} in doubt`, `sent, no answer recorded; ${how}`);
    else add(e.last_attempt_at, 'effects', `effect ${e.effect_key} pending`, `not applied by the upstream (definite refusal); ${how}`);
    if (e.reconciliations > 0)
      add(
        e.updated_at,
        'effects',
        `effect ${e.effect_key} reconciled`,
        `${e.reconciliations} reconciling call(s) with the same effect key`,
      );
  }
  if (job.status === 'succeeded' && job.finished_at)
    add(
      job.finished_at,
      'job_intents',
      'result written (fenced)',
      `fence ${job.result_fence} (the attempt number); result stored: ${job.has_result ? 'yes' : 'no'}`,
    );
  for (const o of outbox) {
    add(o.created_at, 'outbox', `outbox row ${o.kind} written`, `effect key ${o.effect_key}; deliver by ${iso(o.deliver_by)}`);
    if (o.delivered_at) add(o.delivered_at, 'outbox', `notification ${o.kind} delivered`, `${o.attempts} delivery attempt(s)`);
    else if (o.state !== 'delivered')
      add(
        job.updated_at > o.created_at ? job.updated_at : o.created_at,
        'outbox',
        `notification ${o.kind} ${o.state}`,
        `${o.last_error ? `${o.last_error}; ` : ''}job notification state: ${job.notification_state ?? '-'}`,
      );
  }
  for (const w of deliveries) {
    add(
      w.first_seen_at,
      'webhook_deliveries',
      `webhook ${w.event_type} received`,
      `source ${w.source}, webhook-id ${w.webhook_id}, subject ${w.subject ?? '-'}: ${w.outcome}${w.times_received > 1 ? `, received ${w.times_received} times (last ${iso(w.last_received_at)})` : ''}`,
    );
  }
  for (const d of deadLetters) {
    add(
      d.created_at,
      'dead_letters',
      `dead letter ${d.id} recorded`,
      `${d.error_class}${d.status_code ? `, HTTP ${d.status_code}` : ''}${d.upstream || d.provider_code ? `, ${upstreamSaid(d)}` : ''}; failed step ${d.failed_step ?? '-'}; ${d.attempts} attempt(s) over all steps; ${d.retry_state ?? ''}; now ${d.state}`,
    );
  }
  for (const a of actions) {
    const extra = ['replayJobId', 'replayId', 'reason']
      .filter((k) => a.details[k] !== undefined)
      .map((k) => `${k} ${String(a.details[k])}`)
      .join(', ');
    add(a.at, 'dead_letter_actions', `${a.action.replace(/_/g, ' ')} by ${a.actor}`, extra || undefined);
  }
  // Single operator actions (a rerun): on the original's timeline and on the rerun's.
  for (const a of jobActions) {
    const from = typeof a.details.fromStep === 'string' ? ` from step ${a.details.fromStep}` : '';
    if (a.job_id === job.job_id) add(a.at, 'job_actions', `rerun requested by ${a.actor}`, `new job ${a.result_job_id}${from}`);
    else add(a.at, 'job_actions', `rerun of ${a.job_id} requested by ${a.actor}`, `this job${from}`);
  }
  for (const r of replays) {
    add(r.created_at, 'job_intents', `replay job ${r.job_id} accepted`, `replay of this job; now ${r.status}`);
    add(r.finished_at, 'job_intents', `replay job ${r.job_id} ${r.status}`);
  }
  if (job.finished_at && job.status !== 'succeeded')
    add(
      job.finished_at,
      'job_intents',
      `job ${job.status.replace('_', '-')}`,
      job.status === 'cancelled'
        ? `on request of tenant ${job.tenant_id} (${job.status_reason ?? 'cancelled'})`
        : (job.status_reason ?? undefined),
    );

  const pending = effects
    .filter((e) => e.state !== 'succeeded' && !e.step.startsWith('notify-'))
    .sort((a, b) => b.last_attempt_at.getTime() - a.last_attempt_at.getTime())[0];
  const dl = deadLetters.find((d) => d.id === job.dead_letter_id) ?? deadLetters.at(-1);
  const discard = dl ? actions.filter((a) => a.dead_letter_id === dl.id && a.action === 'discarded').at(-1) : undefined;
  const newest = replays.at(-1);
  const notifyFailures = attempts.filter((a) => a.step === 'notify' && (a.outcome === 'retryable' || a.outcome === 'non_retryable')).length;
  const facts: Omit<StageFacts, 'now' | 'taskQueue'> = {
    jobType: job.job_type,
    status: job.status,
    statusReason: job.status_reason,
    createdAt: job.created_at,
    workflowStartedAt: job.workflow_started_at,
    firstStartedAt: job.first_started_at,
    finishedAt: job.finished_at,
    deferredAt: job.deferred_at,
    nextAttemptAt: job.next_attempt_at,
    runAt: job.run_at,
    attempts: job.attempts,
    lastError: job.last_error,
    pendingEffect: pending
      ? {
          step: pending.step,
          state: pending.state as 'pending' | 'failed',
          inDoubt: pending.in_doubt,
          sentAt: pending.last_attempt_at,
          reconciliations: pending.reconciliations,
        }
      : null,
    notification: { state: job.notification_state, failures: notifyFailures, pending: outbox.filter((o) => o.state === 'pending').length },
    deadLetter: dl
      ? {
          id: dl.id,
          state: dl.state,
          failedStep: dl.failed_step,
          attempts: dl.attempts,
          retryState: dl.retry_state,
          discardReason: dl.discard_reason,
          discardedBy: discard?.actor ?? null,
        }
      : null,
    replay: newest ? { jobId: newest.job_id, status: newest.status } : null,
  };
  const lineage: JobTimeline['lineage'] = {
    ...(job.replay_of ? { replayOf: job.replay_of } : {}),
    replays: replays.map((r) => ({ jobId: r.job_id, status: r.status, createdAt: iso(r.created_at) })),
    deadLetterIds: deadLetters.map((d) => d.id),
  };
  return { events: ev, facts, attempts, duplicates, lineage };
}

export async function jobTimeline(deps: TimelineDeps, jobId: string): Promise<JobTimeline> {
  const job = await q.timelineIntent(deps.pool, jobId);
  if (!job) throw new NotFoundError(`job ${jobId} not found`);
  const [pgSide, temporal, traceId] = await Promise.all([
    postgresEvents(deps.pool, job),
    temporalSide(deps, jobId),
    findJobTrace(deps.pool, jobId),
  ]);
  const now = new Date();
  const facts: StageFacts = {
    ...pgSide.facts,
    now,
    ...(temporal.workflowTaskFailure ? { workflowTaskFailure: temporal.workflowTaskFailure } : {}),
    ...(temporal.pausedActivity ? { pausedActivity: temporal.pausedActivity } : {}),
  };
  // Only a job no worker has started yet needs Temporal's view of its task queue.
  if (!job.first_started_at && job.workflow_started_at && job.status === 'queued') {
    const name = temporal.info.taskQueue ?? deps.taskQueue;
    const [tq] = await taskQueueHealth(deps.temporal, [name]);
    if (tq && (tq.workflow || tq.activity))
      facts.taskQueue = { name, workflowPollers: tq.workflow?.pollers ?? null, activityPollers: tq.activity?.pollers ?? null };
  }
  const verdict = stageVerdict(facts);
  const events = [...pgSide.events, ...temporal.events]
    .map((e, i) => ({ e, i, t: Date.parse(e.at) }))
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map((x) => x.e);
  return {
    jobId: job.job_id,
    tenantId: job.tenant_id,
    jobType: job.job_type,
    priority: job.priority,
    status: visibleState(job, now),
    generatedAt: now.toISOString(),
    stage: verdict.words,
    nextStep: verdict.nextStep,
    verdict,
    timings: stageTimings(
      {
        now,
        createdAt: job.created_at,
        workflowStartedAt: job.workflow_started_at,
        firstStartedAt: job.first_started_at,
        finishedAt: job.finished_at,
        deferredAt: job.deferred_at,
        admittedAt: job.admitted_at,
        status: job.status,
        runAt: job.run_at,
      },
      pgSide.attempts.map((a) => ({ step: a.step, startedAt: a.started_at, finishedAt: a.finished_at })),
    ),
    duplicates: { count: pgSide.duplicates.length, at: pgSide.duplicates.map(iso) },
    lineage: pgSide.lineage,
    temporal: temporal.info,
    trace: traceId ? { traceId, ...(deps.traceUiUrl ? { url: traceUrl(deps.traceUiUrl, traceId) } : {}) } : null,
    events,
  };
}

/** What a tenant sees of the verdict on `GET /v1/jobs/{id}`: the stage in words, the next step, and the replay job. */
export interface TenantStage {
  stage: string;
  nextStep: string;
  replayJobId?: string;
}

type StatusRow = IntentRow & { deferred_at?: Date | null; dead_letter_id?: string | null };

export async function tenantStage(pool: pg.Pool, row: StatusRow): Promise<TenantStage> {
  const f = await q.stageFacts(pool, row.job_id, row.replay_of ?? row.job_id);
  const facts: StageFacts = {
    now: new Date(),
    status: row.status,
    statusReason: row.status_reason,
    createdAt: row.created_at,
    workflowStartedAt: row.workflow_started_at,
    firstStartedAt: row.first_started_at,
    finishedAt: row.finished_at,
    deferredAt: row.deferred_at ?? null,
    nextAttemptAt: row.next_attempt_at,
    runAt: row.run_at,
    attempts: row.attempts,
    lastError: row.last_error,
    pendingEffect: f.effect_step
      ? {
          step: f.effect_step,
          state: f.effect_state as 'pending' | 'failed',
          inDoubt: f.effect_in_doubt === true,
          sentAt: f.effect_sent_at!,
          reconciliations: f.effect_reconciliations ?? 0,
        }
      : null,
    notification: { state: row.notification_state, failures: f.notify_failures, pending: f.outbox_pending },
    deadLetter: f.dl_id
      ? {
          id: f.dl_id,
          state: f.dl_state!,
          failedStep: f.dl_failed_step,
          attempts: f.dl_attempts ?? row.attempts,
          retryState: f.dl_retry_state,
          discardReason: f.dl_discard_reason,
        }
      : null,
    replay: f.replay_job_id ? { jobId: f.replay_job_id, status: f.replay_job_status ?? 'queued' } : null,
  };
  const v = stageVerdict(facts);
  return { stage: v.words, nextStep: v.nextStep, ...(f.replay_job_id ? { replayJobId: f.replay_job_id } : {}) };
}

/** "stripe said card_declined": the upstream a failure reached, in its own words (migration 0021). */
function upstreamSaid(r: { upstream: string | null; provider_code: string | null }): string | null {
  if (!r.upstream && !r.provider_code) return null;
  return `${r.upstream ?? 'the upstream'}${r.provider_code ? ` said ${r.provider_code}` : ''}`;
}
