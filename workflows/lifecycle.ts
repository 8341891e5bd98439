import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { JobState, StepArgs } from '../contract/job-types.js';
import { JobStateKey, jobProgressQuery } from '../contract/messages.js';
import { bookkeepingActivities as bookkeeping } from './activity-options.js';
import { admissionGate, foldGateIntoFirstStep, HOLD_AT_NEXT_STEP_PATCH, holdAtEveryStep } from './admission.js';
import { changed } from './shape.js';

/** What the `jobProgress` query answers. */
export interface JobProgress {
  phase: string;
  detail: string;
}

/** Sets the job's visible state: the `JobState` search attribute, the current details and the query's answer. */
export type SetPhase = (state: JobState, detail: string) => void;

function visibleState(progress: JobProgress): SetPhase {
  return (state, detail) => {
    progress.phase = state;
    progress.detail = detail;
    upsertSearchAttributes([{ key: JobStateKey, value: state }]);
    setCurrentDetails(`**${state}**${detail ? `: ${detail}` : ''}`);
  };
}

export interface JobOutcome {
  state: JobState;
  result?: unknown;
}

function failureEvidence(err: ActivityFailure): { errorClass: string; message: string; statusCode?: number } {
  const cause = err.cause;
  // A timeout after retries (the elapsed cap) carries the last attempt's failure as its cause:
  // that is the evidence an operator needs, with the timeout named beside it.
  if (cause instanceof TimeoutFailure && cause.cause instanceof ApplicationFailure) {
    const last = failureEvidence(
      new ActivityFailure(err.message, err.activityType, err.activityId, err.retryState, err.identity, cause.cause),
    );
    return { ...last, message: `${last.message}; elapsed cap reached (${cause.timeoutType} timeout)` };
  }
  if (cause instanceof ApplicationFailure) {
    const d = (cause.details?.[0] ?? {}) as { errorClass?: string; statusCode?: number };
    return { errorClass: d.errorClass ?? cause.type ?? 'ApplicationFailure', message: cause.message, statusCode: d.statusCode };
  }
  return { errorClass: cause?.name ?? 'ActivityFailure', message: cause?.message ?? err.message };
}

/**
 * The `JobState` search attribute next to the API's `status`, at each moment a user can see:
 *
 * | moment                                          | API `status`                 | `JobState`      |
 * | ----------------------------------------------- | ---------------------------- | --------------- |
 * | delayed (`runAt`), before its time (**)         | `scheduled`                  | `scheduled`     |
 * | accepted, no worker has taken it yet            | `queued`                     | `queued`        |
 * | held back by the degradation gate               | `deferred`                   | `deferred`      |
 * | admitted, step scheduled, no attempt running yet | `queued` (with slot reason)  | `running`       |
 * | first step scheduled, asking the gate in it (*)  | `queued`                     | `running`       |
 * | an attempt is running                           | `running`                    | `running`       |
 * | between attempts (back-off)                     | `retrying`                   | `running`       |
 * | result stored, notification still going out     | `succeeded`                  | `succeeded`     |
 * | dead-lettered / cancelled                       | `dead_lettered` / `cancelled`| same            |
 *
 * Why the two differ where they do: the workflow sees a step only as scheduled or finished.
 * Temporal retries an activity on the server without telling the workflow, so `retrying`
 * (and "scheduled but not yet picked up") exist only in Postgres, where the attempts write
 * them; a search-attribute update per attempt would also cost a history event each. So
 * `JobState="running"` means "admitted and not finished": it covers `queued`-after-admission,
 * `running` and `retrying`. Each change reaches the search attribute in the workflow task
 * after the activity that wrote the API's row, so it may lag the API by that one task.
 *
 * (*) With `admitInFirstStep` the gate's question is asked by the first step's statement, so the
 * workflow sets `running` when it schedules that step; a job the gate then holds back shows
 * `deferred` one workflow task later, while the API's row goes from `queued` to `deferred`.
 *
 * (**) Set at the start (services/start-job.ts) with Temporal's start delay: the workflow has not
 * run yet. Once it runs, the gate and the body set the states below; until the first of them,
 * `JobState` may say `scheduled` for a task while the API already says `queued`.
 */
export const SEARCH_STATE_FOR_STATUS: Record<JobState, JobState> = {
  scheduled: 'scheduled',
  queued: 'queued',
  deferred: 'deferred',
  running: 'running',
  retrying: 'running',
  succeeded: 'succeeded',
  dead_lettered: 'dead_lettered',
  cancelled: 'cancelled',
};

/**
 * For job bodies: the result is stored, so the job has succeeded for the API; work that
 * follows (the notification) must not hold the Web UI's `JobState` at `running`.
 * Patched: workflows started before this change replay without the extra update.
 */
export function resultStored(setPhase: SetPhase, current = false): void {
  if (changed(current, 'jobstate-succeeded-on-result')) setPhase('succeeded', 'result stored; notification pending');
}

export interface RunJobOptions {
  /**
   * The workflow type is newer than every patch of the lifecycle (`workflows/shape.ts`): a
   * fast-path type. It then takes each patch's current branch without calling `patched()`.
   * Never set it on a type with runs that started before those patches. Default false.
   */
  current?: boolean;
  /**
   * Fold the degradation gate into the body's first step: that step's first statement asks
   * whether the job is admitted at once (`StepArgs.admitInStep`), instead of a local activity
   * before the body. A job admitted at once then costs one Postgres statement and one local
   * activity fewer; one that is not (a paused priority, a ramped resume) comes back from that
   * step with nothing written, runs the gate as before, and is scheduled again. Set it only
   * when the body's first activity is a step proxied with `stepActivities` (only those ask the
   * question; any other would run ungated). Patched (`admission-in-first-step`): runs started
   * before it replay with the gate first. Default false.
   */
  admitInFirstStep?: boolean;
}

/**
 * The lifecycle every job workflow shares: visible state (search attribute, current
 * details, query), cancellation recorded as `cancelled`, and a terminal failure recorded
 * as `dead_lettered` before the workflow fails, so the Web UI and the API agree.
 */
export async function runJob(
  args: StepArgs,
  job: { description: string },
  body: (setPhase: SetPhase) => Promise<unknown>,
  opts: RunJobOptions = {},
): Promise<JobOutcome> {
  const current = opts.current ?? false;
  const progress: JobProgress = { phase: 'queued', detail: '' };
  const setPhase = visibleState(progress);
  setHandler(jobProgressQuery, () => ({ ...progress }));
  // `queued` (as set at the start) until the gate admits the job, like the API; older runs
  // set `running` here and replay that way.
  const queuedUntilAdmitted = changed(current, 'jobstate-queued-until-admitted');
  if (!queuedUntilAdmitted) setPhase('running', job.description);
  // Always `patched()`, never `current`: fast-path types that opt in had runs before this change.
  const gateInStep = opts.admitInFirstStep === true && patched('admission-in-first-step');
  // Issue 38 §4: a pause also holds an admitted job at its next step. Until a pause holds one,
  // the job's commands are the same either way (only the steps' arguments carry the question),
  // so a `current` type's runs from before it replay on the new branch without the marker; the
  // others take the patch, so a worker without this code never runs a history with a held step.
  const holdsAtSteps = changed(current, HOLD_AT_NEXT_STEP_PATCH);
  let gateRounds = 0;
  try {
    if (gateInStep) {
      // The first step asks the gate's question; a refusal runs the gate below and shows
      // `deferred` one workflow task after this `running` (as the API's row never says running).
      foldGateIntoFirstStep(async () => {
        await admissionGate(args, setPhase, current);
      });
      if (progress.phase !== 'running') setPhase('running', job.description);
    } else {
      // Degradation gate: a paused priority waits here, visibly `deferred`, before any step runs.
      gateRounds = await admissionGate(args, setPhase, current);
      if (queuedUntilAdmitted && progress.phase !== 'running') setPhase('running', job.description);
    }
    // Each later run of the gate takes rounds after those used before: a held job takes a new ramp slot each time it resumes.
    if (holdsAtSteps) holdAtEveryStep((firstRound) => admissionGate(args, setPhase, current, firstRound), gateInStep, gateRounds);
    const result = await body(setPhase);
    setPhase('succeeded', '');
    return { state: 'succeeded', result };
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() =>
        bookkeeping.recordJobState({ ...args, state: 'cancelled', reason: 'cancelled on request' }),
      );
      setPhase('cancelled', 'cancelled on request');
      throw err;
    }
    if (err instanceof ActivityFailure) {
      const evidence = failureEvidence(err);
      const info = workflowInfo();
      // Not cancellable: a cancel arriving now must not leave the job with neither a dead
      // letter nor a cancelled state (the row would say `retrying` forever).
      await CancellationScope.nonCancellable(() =>
        bookkeeping.recordDeadLetter({
          ...args,
          runId: info.runId,
          buildId: info.currentBuildId ?? null,
          // The activity words it from the retry state and the last failed attempt (lib/failure-reason.ts).
          reason: `${evidence.errorClass} (${err.retryState})`,
          error: evidence,
          errorType: err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : err.cause?.name,
          retryState: String(err.retryState),
          failedStep: err.activityType,
        }),
      );
      setPhase('dead_lettered', evidence.errorClass);
      throw ApplicationFailure.create({
        message: `job dead-lettered: ${evidence.message}`,
        type: 'JobDeadLettered',
        nonRetryable: true,
        details: [evidence],
      });
    }
    throw err;
  }
}
