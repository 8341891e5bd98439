/**
 * What the engine says of an unfinished job, in the tenant's words (issue 40 §5): `GET
 * /v1/jobs/{id}` and the client's `getJob` name a workflow task Temporal keeps failing (a
 * non-deterministic deploy, a worker without the job's type, a broken bundle), a job no worker
 * polls for, and a step paused in Temporal. Postgres cannot see these: the job just looks
 * queued or retrying. The facts are the operator timeline's (services/timeline-temporal.ts,
 * lib/job-stage.ts, services/queue-health.ts), read with the fewest calls: one describe, plus
 * one page of the newest history events (and the failing worker's build from the pollers) when
 * a workflow task is failing, plus the queue's pollers while no attempt has started. Never a worker's identity, a task queue, an operator's
 * note or a stack trace: the timeline has those, for operators.
 */
import type { Client } from '@temporalio/client';
import { missingPoller } from '../lib/job-stage.js';
import type { EngineCondition } from './job-status.js';
import { taskQueueHealth } from './queue-health.js';
import { failingWorkflowTask, pausedActivity } from './timeline-temporal.js';
import { pollerBuildId } from './worker-versions.js';

/**
 * The whole check's deadline: a status poll must stay fast, and a Temporal that does not answer
 * in time only costs the field, never the answer. A describe on a healthy frontend takes
 * milliseconds.
 */
export const ENGINE_CHECK_TIMEOUT_MS = 1_500;
/** How long one job's answer is reused: clients poll every second, and many may poll the same job. */
export const ENGINE_CHECK_CACHE_MS = 2_000;
/** Newest history events read when a workflow task fails: the failed task's own events are the last three. */
const TAIL_EVENTS = 10;
/** Answers kept at most (a map, oldest evicted first), so memory stays bounded whatever is polled. */
const CACHE_ENTRIES = 10_000;
const MESSAGE_CHARS = 160;

export interface EngineJob {
  jobId: string;
  jobType: string;
  /** The first attempt started: no longer waiting for a worker to claim it. */
  firstStartedAt: Date | null;
}

export interface EngineCheckOptions {
  /** Default ENGINE_CHECK_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Default ENGINE_CHECK_CACHE_MS; 0 asks Temporal on every call. */
  cacheMs?: number;
}

/** The failure's first line, without file paths, cut to MESSAGE_CHARS: enough to name it, never a stack. */
export function tenantSafeMessage(message: string): string {
  const line = (message.split('\n')[0] ?? '').replace(/(?:[A-Za-z]:)?(?:[\\/][\w.@-]+){2,}(?::\d+)*/g, '…').trim();
  return line.length > MESSAGE_CHARS ? `${line.slice(0, MESSAGE_CHARS - 1)}…` : line;
}

const times = (n: number) => (n === 1 ? 'once' : `${n} times`);

async function readCondition(temporal: Client, job: EngineJob, deadline: number): Promise<EngineCondition | undefined> {
  const within = <T>(fn: () => Promise<T>) => temporal.connection.withDeadline(deadline, fn);
  const d = await within(() => temporal.workflow.getHandle(job.jobId).describe());
  if (d.status.name !== 'RUNNING') return undefined;

  // A failing task is retried by the engine without new history events: the pending task's
  // attempt counts the failures, the newest events hold the first one.
  const attempt = d.raw.pendingWorkflowTask?.attempt ?? 0;
  if (attempt > 1) {
    const page = await within(() =>
      temporal.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: temporal.options.namespace,
        execution: { workflowId: job.jobId, runId: d.runId },
        maximumPageSize: TAIL_EVENTS,
      }),
    );
    const failed = failingWorkflowTask([...(page.history?.events ?? [])].reverse(), true, attempt);
    if (failed) {
      // The build the failure was reported with, else the one the job is pinned to, else the
      // failing worker's own as it polls (an unversioned worker's build ID is only there).
      const pinned = d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
      const buildId =
        failed.buildId ||
        pinned ||
        (failed.identity ? await pollerBuildId(temporal, d.taskQueue, failed.identity, deadline).catch(() => undefined) : undefined);
      return {
        kind: 'workflow-task-failing',
        message: `the engine cannot run this job's workflow code: its task failed ${times(failed.attempt)}${buildId ? ` on build ${buildId}` : ''} (${tenantSafeMessage(failed.message)}); the job waits and resumes where it stopped once the workers are fixed`,
        ...(buildId ? { buildId } : {}),
      };
    }
  }

  const paused = pausedActivity(d.raw.pendingActivities ?? []);
  if (paused) {
    return {
      kind: 'activity-paused',
      message: `a step of this job is paused in the engine by an operator; it resumes when they unpause it (no attempt is spent while paused)`,
      ...(paused.since ? { since: paused.since.toISOString() } : {}),
    };
  }

  // As the timeline: only a job no worker has claimed yet is asked about its queue's pollers.
  if (!job.firstStartedAt) {
    const [q] = await taskQueueHealth(temporal, [d.taskQueue], { deadline });
    const kind = missingPoller(q && { workflowPollers: q.workflow?.pollers ?? null, activityPollers: q.activity?.pollers ?? null });
    if (kind) {
      return {
        kind: 'no-poller',
        message: `no ${kind} is running for job type ${job.jobType}: the job waits in the queue and starts when one polls`,
      };
    }
  }
  return undefined;
}

/**
 * `(job) => condition | undefined`, for unfinished jobs only (the caller knows from Postgres).
 * Resolves within `timeoutMs` whatever Temporal does: undefined when it does not answer in
 * time, errs, or shows nothing wrong. Concurrent and recent checks of one job share one answer.
 */
export function createEngineCheck(temporal: Client, o: EngineCheckOptions = {}) {
  const timeoutMs = o.timeoutMs ?? ENGINE_CHECK_TIMEOUT_MS;
  const cacheMs = o.cacheMs ?? ENGINE_CHECK_CACHE_MS;
  const recent = new Map<string, { at: number; answer: Promise<EngineCondition | undefined> }>();
  const ask = (job: EngineJob): Promise<EngineCondition | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    // withDeadline bounds each gRPC call; the race bounds the whole, even a client that hangs before its call.
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    return Promise.race([readCondition(temporal, job, Date.now() + timeoutMs).catch(() => undefined), late]).finally(() =>
      clearTimeout(timer),
    );
  };
  return (job: EngineJob): Promise<EngineCondition | undefined> => {
    if (cacheMs <= 0) return ask(job);
    const now = Date.now();
    const hit = recent.get(job.jobId);
    if (hit && now - hit.at < cacheMs) return hit.answer;
    recent.delete(job.jobId);
    if (recent.size >= CACHE_ENTRIES) recent.delete(recent.keys().next().value!);
    const answer = ask(job);
    recent.set(job.jobId, { at: now, answer });
    return answer;
  };
}

export type EngineCheck = ReturnType<typeof createEngineCheck>;
