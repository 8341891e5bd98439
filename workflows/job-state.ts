// A job's visible state, as the Web UI and the `jobProgress` query show it: the `JobState`
// search attribute, the workflow's current details and the query's answer (workflows/lifecycle.ts
// sets it at each moment of a job's life).
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { JobState } from '../contract/job-types.js';
import { JobStateKey } from '../contract/messages.js';

/** What the `jobProgress` query answers. */
export interface JobProgress {
  phase: string;
  detail: string;
}

/** Sets the job's visible state: the `JobState` search attribute, the current details and the query's answer. */
export type SetPhase = (state: JobState, detail: string) => void;

export function visibleState(progress: JobProgress): SetPhase {
  return (state, detail) => {
    progress.phase = state;
    progress.detail = detail;
    upsertSearchAttributes([{ key: JobStateKey, value: state }]);
    setCurrentDetails(`**${state}**${detail ? `: ${detail}` : ''}`);
  };
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
 * (`_current` has no effect any more: job workflows are pinned, so no patch guards this.)
 */
export function resultStored(setPhase: SetPhase, _current = false): void {
  setPhase('succeeded', 'result stored; notification pending');
}
