// Where a job of the fairness section waited (issue 38 §5: "measure, don't guess"): from its
// Temporal history, the time its tasks sat in the workflow and activity task queues, its
// timers (slot waits, the admission gate's waits) and its activities' run time. Summed per job.
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';

export interface JobStages {
  /** Workflow tasks: scheduled to started, summed. */
  workflowQueueMs: number;
  /** Activity tasks: scheduled to started, summed (local activities have none). */
  activityQueueMs: number;
  /** Activities: started to closed, summed. */
  activityRunMs: number;
  /** Durable timers: started to fired, summed (slot waits in the workflow, gate waits). */
  timerMs: number;
  /** Activity tasks scheduled (each slot try is one). */
  activities: number;
  /** First workflow task scheduled to the run's close. */
  totalMs: number;
  /** The job's submit (its row's `created_at`, given by the caller) to its run's first event: the start call and, with a start delay, the delay. */
  submitToStartMs: number;
}

const ms = (t: temporal.api.history.v1.IHistoryEvent['eventTime']): number =>
  Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);

/** The stages of one job's run, from its history (`JobStages`). */
export async function jobStages(client: Client, jobId: string, submittedAt?: number): Promise<JobStages> {
  const events = (await client.workflow.getHandle(jobId).fetchHistory()).events ?? [];
  const at = new Map<number, number>(events.map((e) => [Number(e.eventId), ms(e.eventTime)]));
  const s: JobStages = {
    workflowQueueMs: 0,
    activityQueueMs: 0,
    activityRunMs: 0,
    timerMs: 0,
    activities: 0,
    totalMs: 0,
    submitToStartMs: 0,
  };
  const since = (id: unknown, end: number) => end - (at.get(Number(id)) ?? end);
  for (const e of events) {
    const t = ms(e.eventTime);
    if (e.workflowTaskStartedEventAttributes) s.workflowQueueMs += since(e.workflowTaskStartedEventAttributes.scheduledEventId, t);
    else if (e.activityTaskScheduledEventAttributes) s.activities++;
    else if (e.activityTaskStartedEventAttributes) s.activityQueueMs += since(e.activityTaskStartedEventAttributes.scheduledEventId, t);
    else if (e.activityTaskCompletedEventAttributes) s.activityRunMs += since(e.activityTaskCompletedEventAttributes.startedEventId, t);
    else if (e.activityTaskFailedEventAttributes) s.activityRunMs += since(e.activityTaskFailedEventAttributes.startedEventId, t);
    else if (e.timerFiredEventAttributes) s.timerMs += since(e.timerFiredEventAttributes.startedEventId, t);
    else if (e.timerCanceledEventAttributes) s.timerMs += since(e.timerCanceledEventAttributes.startedEventId, t);
  }
  // From the first workflow task (a delayed start's delay is not the job's wait).
  const first = events.find((e) => e.workflowTaskScheduledEventAttributes);
  s.totalMs = first ? ms(events.at(-1)!.eventTime) - ms(first.eventTime) : 0;
  s.submitToStartMs = submittedAt !== undefined && events[0] ? ms(events[0].eventTime) - submittedAt : 0;
  return s;
}

/** The median of each stage over the jobs, rounded to the millisecond. */
export async function medianStages(client: Client, jobIds: string[], submittedAt?: Map<string, number>): Promise<JobStages> {
  const all = await Promise.all(jobIds.map((id) => jobStages(client, id, submittedAt?.get(id))));
  const med = (k: keyof JobStages) => {
    const v = all.map((x) => x[k]).sort((a, b) => a - b);
    return v.length ? Math.round(v[Math.floor(v.length / 2)]!) : 0;
  };
  return {
    workflowQueueMs: med('workflowQueueMs'),
    activityQueueMs: med('activityQueueMs'),
    activityRunMs: med('activityRunMs'),
    timerMs: med('timerMs'),
    activities: med('activities'),
    totalMs: med('totalMs'),
    submitToStartMs: med('submitToStartMs'),
  };
}

export const stagesText = (s: JobStages): string =>
  `submit to start ${s.submitToStartMs} ms, wf-task queue ${s.workflowQueueMs} ms, activity queue ${s.activityQueueMs} ms (${s.activities} activities), activity run ${s.activityRunMs} ms, timers ${s.timerMs} ms, run ${s.totalMs} ms`;
