import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  setHandler,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { JobState, StepArgs } from '../contract/job-types.js';
import { jobProgressQuery } from '../contract/messages.js';
import { bookkeepingActivities as bookkeeping } from './activity-options.js';
import { admissionGate, foldGateIntoFirstStep, holdAtEveryStep } from './admission.js';
import { visibleState, type JobProgress, type SetPhase } from './job-state.js';

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

export interface RunJobOptions {
  /**
   * @deprecated No effect: the lifecycle has no `patched()` branches left (job workflows are
   * pinned to the build that started them, workers/versioning.ts), so every type takes what a
   * `current` type took. Kept so existing job types compile.
   */
  current?: boolean;
  /**
   * Fold the degradation gate into the body's first step: that step's first statement asks
   * whether the job is admitted at once (`StepArgs.admitInStep`), instead of a local activity
   * before the body. A job admitted at once then costs one Postgres statement and one local
   * activity fewer; one that is not (a paused priority, a ramped resume) comes back from that
   * step with nothing written, runs the gate as before, and is scheduled again. Set it only
   * when the body's first activity is a step proxied with `stepActivities` (only those ask the
   * question; any other would run ungated). Default false.
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
  const progress: JobProgress = { phase: 'queued', detail: '' };
  const setPhase = visibleState(progress);
  setHandler(jobProgressQuery, () => ({ ...progress }));
  // Job workflows are pinned (workers/versioning.ts): a run replays only on the build that
  // started it, so the lifecycle's changes need no `patched()` branch (docs/deploying.md). The
  // job shows `queued` until the gate admits it; a pause also holds an admitted job at its next step.
  const gateInStep = opts.admitInFirstStep === true;
  let gateRounds = 0;
  try {
    if (gateInStep) {
      // The first step asks the gate's question; a refusal runs the gate below and shows
      // `deferred` one workflow task after this `running` (as the API's row never says running).
      foldGateIntoFirstStep(async () => {
        await admissionGate(args, setPhase);
      });
      if (progress.phase !== 'running') setPhase('running', job.description);
    } else {
      // Degradation gate: a paused priority waits here, visibly `deferred`, before any step runs.
      gateRounds = await admissionGate(args, setPhase);
      if (progress.phase !== 'running') setPhase('running', job.description);
    }
    // Each later run of the gate takes rounds after those used before: a held job takes a new ramp slot each time it resumes.
    holdAtEveryStep((firstRound) => admissionGate(args, setPhase, firstRound), gateInStep, gateRounds);
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
