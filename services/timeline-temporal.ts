// The Temporal side of a job's timeline: its history events (workflow and activity tasks,
// timers, signals, the gate's decision) and the attempt still pending, from the frontend.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { decodeHistoryPayloads } from '../lib/payload-codec.js';
import proto from '@temporalio/proto';
import { duration, type StageFacts } from '../lib/job-stage.js';
import type { HistoryWindow, JobTimeline, TimelineDeps, TimelineEvent } from './timeline-types.js';
import { ADMISSION_WAIT_FAILURE, SLOT_WAIT_FAILURE, stepWaitOf } from '../contract/job-types.js';

export const iso = (d: Date) => d.toISOString();
const E = proto.temporal.api.enums.v1.EventType;

/** `EVENT_TYPE_ACTIVITY_TASK_SCHEDULED` → `ActivityTaskScheduled`. */
function eventTypeName(t: unknown): string {
  const raw = typeof t === 'number' ? (E[t] ?? String(t)) : String(t);
  return raw
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

function tsMs(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): number | undefined {
  if (!ts) return undefined;
  const s = ts.seconds === null || ts.seconds === undefined ? 0 : Number((ts.seconds as { toString(): string }).toString());
  return s * 1_000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

const durMs = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) => tsMs(d);

function decode(payloads: { payloads?: unknown[] | null } | null | undefined): unknown {
  const p = payloads?.payloads?.[0];
  if (!p) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(p as never);
  } catch {
    return undefined;
  }
}

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** The gate's decision, in words. */
function gateDecision(result: unknown): string | undefined {
  const d = result as { decision?: string; reason?: string; waitMs?: number } | undefined;
  return d?.decision ? `${d.decision}${d.reason ? `: ${d.reason}` : ''}${d.waitMs ? ` (wait ${duration(d.waitMs)})` : ''}` : undefined;
}

/** The marker name the TypeScript SDK's core gives local activities. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/**
 * How an activity that ended reads: a step that had to wait is no failure and no result (no
 * attempt was spent). It returns the wait (`StepWait`); histories from before
 * `SlotWaitArgs.waitsReturn` hold it as a `SlotWait` or `AdmissionWait` failure.
 */
function endedAs(outcome: { result?: unknown; failureType?: string | null }): string {
  const wait = stepWaitOf(outcome.result)?.durableJobsWait;
  if (wait === 'slot' || outcome.failureType === SLOT_WAIT_FAILURE) return 'activity waiting for a slot';
  if (wait === 'admission' || outcome.failureType === ADMISSION_WAIT_FAILURE) return 'activity held for the degradation gate';
  return outcome.failureType !== undefined ? 'activity failed' : 'activity completed';
}

/** A local activity's marker: its type (from the marker's `data`), and how it ended. */
function localActivity(
  a: proto.temporal.api.history.v1.IMarkerRecordedEventAttributes,
): { name: string; event: string; detail?: string } | undefined {
  const data = decode(a.details?.data) as { activity_type?: string; activityType?: string } | undefined;
  const name = data?.activity_type ?? data?.activityType;
  if (!name) return undefined;
  if (a.failure) {
    const event = endedAs({ failureType: a.failure.applicationFailureInfo?.type ?? null });
    return { name, event, ...(a.failure.message ? { detail: a.failure.message } : {}) };
  }
  const result = decode(a.details?.result);
  const wait = stepWaitOf(result);
  const detail = wait ? wait.message : name === 'checkAdmission' ? gateDecision(result) : undefined;
  return { name, event: endedAs({ result }), ...(detail ? { detail } : {}) };
}

/** One timeline line per history event; activity names resolved through their scheduled event. Payloads are not shown, except the gate's decision and a step's reason to wait (our own words). */
function temporalEvents(events: HistoryEvent[]): TimelineEvent[] {
  const activityOf = new Map<string, string>();
  const out: TimelineEvent[] = [];
  for (const ev of events) {
    const at = tsMs(ev.eventTime);
    if (at === undefined) continue;
    const from = eventTypeName(ev.eventType);
    let event = from;
    let detail: string | undefined;
    const sched = (id: unknown) => activityOf.get(String(id)) ?? 'activity';
    if (ev.workflowExecutionStartedEventAttributes) {
      const a = ev.workflowExecutionStartedEventAttributes;
      event = 'workflow started';
      detail = `${a.workflowType?.name ?? ''} on task queue ${a.taskQueue?.name ?? '?'}${a.attempt && a.attempt > 1 ? `, attempt ${a.attempt}` : ''}`;
    } else if (ev.workflowTaskScheduledEventAttributes) event = 'workflow task scheduled';
    else if (ev.workflowTaskStartedEventAttributes) {
      event = 'workflow task started';
      detail = ev.workflowTaskStartedEventAttributes.identity ?? undefined;
    } else if (ev.workflowTaskCompletedEventAttributes) event = 'workflow task completed';
    else if (ev.workflowTaskFailedEventAttributes) {
      event = 'workflow task failed';
      detail = ev.workflowTaskFailedEventAttributes.failure?.message ?? undefined;
    } else if (ev.workflowTaskTimedOutEventAttributes) event = 'workflow task timed out';
    else if (ev.activityTaskScheduledEventAttributes) {
      const a = ev.activityTaskScheduledEventAttributes;
      activityOf.set(String(ev.eventId), a.activityType?.name ?? 'activity');
      event = `activity scheduled: ${a.activityType?.name ?? '?'}`;
      detail = `activity ${a.activityId ?? '?'}; start-to-close ${duration(durMs(a.startToCloseTimeout) ?? 0)}${a.heartbeatTimeout ? `, heartbeat ${duration(durMs(a.heartbeatTimeout) ?? 0)}` : ''}`;
    } else if (ev.activityTaskStartedEventAttributes) {
      const a = ev.activityTaskStartedEventAttributes;
      event = `activity started: ${sched(a.scheduledEventId)}`;
      detail = `attempt ${a.attempt ?? 1}${a.identity ? ` on ${a.identity}` : ''}${a.lastFailure?.message ? `; previous attempt failed: ${a.lastFailure.message}` : ''}`;
    } else if (ev.activityTaskCompletedEventAttributes) {
      const a = ev.activityTaskCompletedEventAttributes;
      const name = sched(a.scheduledEventId);
      const result = decode(a.result);
      const wait = stepWaitOf(result);
      event = `${endedAs({ result })}: ${name}`;
      if (wait) detail = wait.message;
      else if (name === 'checkAdmission') detail = gateDecision(result);
    } else if (ev.activityTaskFailedEventAttributes) {
      const a = ev.activityTaskFailedEventAttributes;
      event = `${endedAs({ failureType: a.failure?.applicationFailureInfo?.type ?? null })}: ${sched(a.scheduledEventId)}`;
      detail = `${a.failure?.message ?? ''}${a.retryState ? ` (${proto.temporal.api.enums.v1.RetryState[a.retryState as number] ?? a.retryState})` : ''}`;
    } else if (ev.activityTaskTimedOutEventAttributes) {
      const a = ev.activityTaskTimedOutEventAttributes;
      event = `activity timed out: ${sched(a.scheduledEventId)}`;
      detail = a.failure?.message ?? undefined;
    } else if (ev.activityTaskCancelRequestedEventAttributes)
      event = `activity cancel requested: ${sched(ev.activityTaskCancelRequestedEventAttributes.scheduledEventId)}`;
    else if (ev.activityTaskCanceledEventAttributes)
      event = `activity cancelled: ${sched(ev.activityTaskCanceledEventAttributes.scheduledEventId)}`;
    else if (ev.timerStartedEventAttributes) {
      const a = ev.timerStartedEventAttributes;
      event = 'timer started';
      detail = `timer ${a.timerId}: fires in ${duration(durMs(a.startToFireTimeout) ?? 0)}`;
    } else if (ev.timerFiredEventAttributes) {
      event = 'timer fired';
      detail = `timer ${ev.timerFiredEventAttributes.timerId}`;
    } else if (ev.timerCanceledEventAttributes) {
      event = 'timer cancelled';
      detail = `timer ${ev.timerCanceledEventAttributes.timerId}`;
    } else if (ev.workflowExecutionSignaledEventAttributes) {
      event = `signal: ${ev.workflowExecutionSignaledEventAttributes.signalName}`;
      detail = ev.workflowExecutionSignaledEventAttributes.identity ?? undefined;
    } else if (ev.workflowExecutionCancelRequestedEventAttributes) {
      event = 'workflow cancel requested';
      detail = ev.workflowExecutionCancelRequestedEventAttributes.identity ?? undefined;
    } else if (ev.workflowExecutionCompletedEventAttributes) event = 'workflow completed';
    else if (ev.workflowExecutionFailedEventAttributes) {
      event = 'workflow failed';
      detail = ev.workflowExecutionFailedEventAttributes.failure?.message ?? undefined;
    } else if (ev.workflowExecutionCanceledEventAttributes) event = 'workflow cancelled';
    else if (ev.workflowExecutionTerminatedEventAttributes) {
      event = 'workflow terminated';
      detail = ev.workflowExecutionTerminatedEventAttributes.reason ?? undefined;
    } else if (ev.workflowExecutionTimedOutEventAttributes) event = 'workflow timed out';
    else if (ev.workflowExecutionContinuedAsNewEventAttributes) event = 'workflow continued as new';
    else if (ev.upsertWorkflowSearchAttributesEventAttributes) event = 'search attributes updated';
    else if (ev.workflowPropertiesModifiedEventAttributes) event = 'workflow properties modified';
    else if (ev.markerRecordedEventAttributes) {
      const a = ev.markerRecordedEventAttributes;
      const local = a.markerName === LOCAL_ACTIVITY_MARKER ? localActivity(a) : undefined;
      if (local) {
        // A local activity (the degradation gate since it runs inside the workflow task) is
        // recorded as a marker: shown like the activity it stands for.
        event = `${local.event}: ${local.name}`;
        detail = local.detail;
      } else {
        event = 'marker recorded';
        detail = a.markerName ?? undefined;
      }
    }
    out.push({ at: new Date(at).toISOString(), source: 'temporal', kind: from, event, ...(detail ? { detail } : {}) });
  }
  return out;
}

/**
 * The newest workflow task failure when no task completed after it and the workflow still runs:
 * the engine keeps retrying a task it cannot run (Temporal records the first failure of a
 * series; the pending task's attempt counts them).
 */
export function failingWorkflowTask(
  events: HistoryEvent[],
  running: boolean,
  pendingAttempt: number | null | undefined,
): { message: string; identity: string | null; attempt: number; workflowType: string | null; buildId: string | null } | null {
  if (!running) return null;
  let failed: HistoryEvent | undefined;
  for (const ev of events) {
    if (ev.workflowTaskFailedEventAttributes) failed = ev;
    else if (ev.workflowTaskCompletedEventAttributes) failed = undefined;
  }
  if (!failed) return null;
  const a = failed.workflowTaskFailedEventAttributes!;
  const started = events.find((e) => e.workflowExecutionStartedEventAttributes)?.workflowExecutionStartedEventAttributes;
  return {
    message: a.failure?.message ?? 'workflow task failed',
    identity: a.identity ?? null,
    attempt: Math.max(1, pendingAttempt ?? 1),
    workflowType: started?.workflowType?.name ?? null,
    // The worker's build ID as it reported the failure (binaryChecksum: servers and SDKs that predate the stamp).
    buildId: a.workerVersion?.buildId || a.binaryChecksum || null,
  };
}

type PendingActivity = NonNullable<proto.temporal.api.workflow.v1.IPendingActivityInfo>;

/** The workflow's paused activity (paused, or its pause requested while an attempt runs), if any. */
export function pausedActivity(pending: PendingActivity[]): StageFacts['pausedActivity'] {
  const S = proto.temporal.api.enums.v1.PendingActivityState;
  const p = pending.find(
    (x) => x.paused === true || x.state === S.PENDING_ACTIVITY_STATE_PAUSED || x.state === S.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED,
  );
  if (!p) return null;
  const info = p.pauseInfo;
  const since = tsMs(info?.pauseTime);
  return {
    activityType: p.activityType?.name ?? '?',
    since: since === undefined ? null : new Date(since),
    by: info?.manual?.identity || (info?.rule ? `rule ${info.rule.ruleId ?? '?'}` : null),
    reason: info?.manual?.reason || info?.rule?.reason || null,
    attempt: p.attempt ?? 1,
  };
}

export const HISTORY_WINDOW: HistoryWindow = { head: 1_000, tail: 300, pageSize: 250 };

type HistoryPage = { history?: { events?: HistoryEvent[] | null } | null; nextPageToken?: Uint8Array | null };

/** Pages of `read` until `want` events or the end; a page holds whole event batches, so it may bring more than asked. */
async function readPages(
  read: (size: number, token: Uint8Array | undefined) => Promise<HistoryPage>,
  want: number,
  pageSize: number,
): Promise<{ events: HistoryEvent[]; more: boolean }> {
  const events: HistoryEvent[] = [];
  let token: Uint8Array | undefined;
  do {
    const page = await read(Math.min(pageSize, want - events.length), token);
    events.push(...(page.history?.events ?? []));
    token = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (token && events.length < want);
  return { events, more: token !== undefined };
}

/**
 * The first `head` events of a run's history and, if it has more, its newest `tail` (read
 * backwards), each page under its own deadline; `omitted` counts the events between them.
 */
export async function readHistoryWindow(
  client: Client,
  execution: { workflowId: string; runId: string },
  w: HistoryWindow,
): Promise<{ events: HistoryEvent[]; omitted: number; headCount: number }> {
  const namespace = client.options.namespace;
  const within = <T>(fn: () => Promise<T>) => client.connection.withDeadline(Date.now() + 5_000, fn);
  const forwards = await readPages(
    (maximumPageSize, nextPageToken) =>
      within(() => client.workflowService.getWorkflowExecutionHistory({ namespace, execution, maximumPageSize, nextPageToken })),
    w.head,
    w.pageSize,
  );
  const head = forwards.events;
  if (!forwards.more && head.length <= w.head) return { events: head, omitted: 0, headCount: head.length };
  const first = head.slice(0, w.head);
  const lastHeadId = Number(first.at(-1)?.eventId ?? 0);
  // Newest first: what the forward pages brought past the head, or pages read backwards.
  const newest = !forwards.more
    ? head.slice(w.head).reverse()
    : (
        await readPages(
          (maximumPageSize, nextPageToken) =>
            within(() =>
              client.workflowService.getWorkflowExecutionHistoryReverse({ namespace, execution, maximumPageSize, nextPageToken }),
            ),
          w.tail,
          w.pageSize,
        )
      ).events;
  const tail = newest
    .slice(0, w.tail)
    .filter((e) => Number(e.eventId) > lastHeadId)
    .reverse();
  const firstTailId = Number(tail[0]?.eventId ?? lastHeadId + 1);
  return { events: [...first, ...tail], omitted: Math.max(0, firstTailId - lastHeadId - 1), headCount: first.length };
}

export async function temporalSide(
  deps: TimelineDeps,
  jobId: string,
): Promise<{
  info: JobTimeline['temporal'];
  events: TimelineEvent[];
  workflowTaskFailure?: ReturnType<typeof failingWorkflowTask>;
  pausedActivity?: StageFacts['pausedActivity'];
}> {
  const info: JobTimeline['temporal'] = { workflowId: jobId };
  if (!deps.temporal) return { info: { ...info, note: 'no Temporal client: Postgres events only' }, events: [] };
  const client = deps.temporal;
  const handle = client.workflow.getHandle(jobId);
  try {
    const within = <T>(fn: () => Promise<T>) => client.connection.withDeadline(Date.now() + 5_000, fn);
    const d = await within(() => handle.describe());
    const {
      events: read,
      omitted,
      headCount,
    } = await readHistoryWindow(client, { workflowId: jobId, runId: d.runId }, deps.historyWindow ?? HISTORY_WINDOW);
    const history = { events: read };
    // With PAYLOAD_CODEC_KEYS the results the timeline reads (the gate's decision) are encrypted: decode them as the client would.
    await decodeHistoryPayloads(history, client.options.loadedDataConverter.payloadCodecs);
    const events = temporalEvents(history.events);
    if (omitted > 0) {
      const lastHead = read[headCount - 1];
      const at = tsMs(lastHead?.eventTime) ?? Date.now();
      // Right after the last event read forwards, at its time: the gap lies between it and the newest ones.
      events.splice(headCount, 0, {
        at: new Date(at).toISOString(),
        source: 'temporal',
        kind: 'HistoryGap',
        event: `${omitted} history events not read`,
        detail: `events ${Number(lastHead?.eventId ?? 0) + 1} to ${Number(lastHead?.eventId ?? 0) + omitted} (the first and the newest are shown); the whole history is in the Temporal Web UI or \`temporal workflow show --workflow-id ${jobId}\``,
      });
    }
    // Retries of an activity leave no history event until the last attempt ends: the pending one shows here.
    for (const p of d.raw.pendingActivities ?? []) {
      const at = tsMs(p.lastStartedTime) ?? tsMs(p.scheduledTime);
      if (at === undefined) continue;
      const state =
        proto.temporal.api.enums.v1.PendingActivityState[p.state as number]?.replace(/^PENDING_ACTIVITY_STATE_/, '').toLowerCase() ??
        'pending';
      events.splice(headCount, 0, {
        at: new Date(at).toISOString(),
        source: 'temporal',
        kind: 'PendingActivity',
        event: `activity pending: ${p.activityType?.name ?? '?'}`,
        detail: `attempt ${p.attempt ?? 1}, ${state}${p.lastFailure?.message ? `; last failure: ${p.lastFailure.message}` : ''}${tsMs(p.nextAttemptScheduleTime) ? `; next attempt ${new Date(tsMs(p.nextAttemptScheduleTime)!).toISOString()}` : ''}`,
      });
    }
    return {
      info: {
        ...info,
        runId: d.runId,
        status: d.status.name,
        taskQueue: d.taskQueue,
        historyEvents: Number(d.historyLength ?? read.length + omitted),
        ...(omitted > 0 ? { historyEventsOmitted: omitted } : {}),
      },
      events,
      workflowTaskFailure: failingWorkflowTask(read, d.status.name === 'RUNNING', d.raw.pendingWorkflowTask?.attempt),
      pausedActivity: d.status.name === 'RUNNING' ? pausedActivity(d.raw.pendingActivities ?? []) : null,
    };
  } catch (err) {
    const name = (err as Error).name;
    const note =
      name === 'WorkflowNotFoundError'
        ? 'no workflow in Temporal for this job (not started, or its history is past retention)'
        : `Temporal unavailable: ${(err as Error).message}`;
    return { info: { ...info, note }, events: [] };
  }
}
