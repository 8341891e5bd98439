import { condition, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/index.js';
import type { StepArgs } from '../contract/job-types.js';
import { degradationChangedSignal } from '../contract/messages.js';
import { BOOKKEEPING_OPTIONS } from './activity-options.js';

/**
 * How often a deferred job re-checks the setting: quickly at first (a short pause lifts
 * quickly), then less often the longer it has been deferred (at most every 5 min), so a
 * long pause costs few history events: about 11 per re-check, roughly 3,000 a day at the
 * cap, far below Temporal's history limits for pauses of days.
 */
export function deferralPollMs(previousMs: number | null, deferredForMs: number): number {
  if (previousMs === null) return 1_000;
  const cap = Math.min(300_000, Math.max(30_000, deferredForMs / 20));
  return Math.min(cap, previousMs * 2);
}

/**
 * The degradation gate, run before a job's body. Temporal 1.29 has no task-queue pause and
 * honours priorities only with a dynamic config we may not control, so the deferral is the
 * product's own durable gate: the job asks whether its priority is admitted; if not it is
 * recorded as `deferred` (reason, since when), shows `deferred` in the Web UI, and waits on
 * a durable timer. When admitted after a deferral it takes its ramp slot first.
 */
export async function admissionGate(
  args: StepArgs,
  phase: (state: 'deferred' | 'running', detail: string) => void,
  firstRound = 0,
): Promise<number> {
  // Bookkeeping-style options: short, retried until Postgres answers (the check is idempotent).
  // A local activity: the check runs in the workflow task that follows, so the first step is scheduled in the same completion,
  // which saves a workflow task and an activity task per job. Re-running it after a lost
  // workflow task is harmless (reads plus idempotent `markDeferred`/`markAdmitted`), and every
  // wait stays a durable timer in the workflow.
  const summary = 'degradation gate: is this priority admitted?';
  const gate = proxyLocalActivities<SystemActivities>({ ...BOOKKEEPING_OPTIONS, summary });
  let nudged = false;
  setHandler(degradationChangedSignal, () => {
    nudged = true;
  });
  // A later run of the gate (a pause held the job at a later step) starts after the rounds of
  // the runs before it: their admitted reservations must not let it skip the ramp this time.
  let round = firstRound;
  let pollMs: number | null = null;
  let deferredSince: number | null = null;
  let shown = '';
  for (;;) {
    const d = await gate.checkAdmission({ ...args, round });
    if (d.decision === 'admit') {
      if (deferredSince !== null) phase('running', 'admitted after deferral');
      return round + 1;
    }
    deferredSince ??= Date.now();
    // Only a changed reason is worth a search-attribute update (each one is a history event).
    if (d.reason !== shown) phase('deferred', d.reason);
    shown = d.reason;
    if (d.decision === 'wait') {
      await sleep(d.waitMs);
      continue;
    }
    round += 1;
    pollMs = deferralPollMs(pollMs, Date.now() - deferredSince);
    nudged = false;
    await condition(() => nudged, pollMs);
  }
}

/**
 * The gate folded into the job's first step (`runJob`'s `admitInFirstStep`): the step's first
 * statement asks the gate's question, so a job admitted at once costs no local activity and no
 * statement of its own.
 */
interface FoldedGate {
  /** The full gate, run when the first step was not admitted (or a later one was held). */
  run: () => Promise<void>;
  /** A step has answered (admitted, or the gate ran after a refusal): later steps skip the question. */
  settled: boolean;
  /** The gate's run after a refusal, shared by steps refused together. */
  running?: Promise<void>;
  /** Every later step asks whether a pause holds the job (`StepArgs.holdIfPaused`, `holdAtEveryStep`). */
  holds?: boolean;
}

/**
 * The folded gate is this workflow's own, so it lives in the workflow's globals, not in module
 * scope: this module is evaluated once per workflow thread and shared by every workflow in it
 * (it is preloaded, workers/worker.ts `WORKFLOW_LIBRARY_PATHS`), while the SDK's reusable V8
 * context swaps the globals of each workflow in and out around its activations.
 */
const FOLDED_GATE = '__durableJobsFoldedGate';
const workflowGlobals = () => globalThis as unknown as { [FOLDED_GATE]?: FoldedGate };
const folded = (): FoldedGate | undefined => workflowGlobals()[FOLDED_GATE];

/** From `runJob`: the next step scheduled asks the gate's question; `run` is the gate for a refusal. */
export function foldGateIntoFirstStep(run: () => Promise<void>): void {
  workflowGlobals()[FOLDED_GATE] = { run, settled: false };
}

/**
 * From `runJob` (patch `hold-at-next-step`): every step after the first asks whether a pause
 * holds the job (issue 38 §4), so a pause of its priority, type or tenant stops an admitted job
 * at its next step, with no attempt spent, instead of only jobs not yet admitted. A refused step
 * runs `gate` (deferred with the pause as its reason, then the ramp) and is scheduled again.
 * `folded`: the first step asks the full question (`foldGateIntoFirstStep` was called first).
 */
export function holdAtEveryStep(gate: (firstRound: number) => Promise<number>, folded: boolean, roundsUsed: number): void {
  // Each run of the gate starts after the rounds of the runs before it.
  let nextRound = roundsUsed;
  const run = async () => {
    nextRound = await gate(nextRound);
  };
  const f = folded ? workflowGlobals()[FOLDED_GATE] : undefined;
  if (f) {
    f.run = run;
    f.holds = true;
  } else workflowGlobals()[FOLDED_GATE] = { run, settled: true, holds: true };
}

/** Whether the step being scheduled asks only whether a pause holds the job (`StepArgs.holdIfPaused`). */
export function gateHoldsAtStep(): boolean {
  const f = folded();
  return f !== undefined && f.settled && f.holds === true;
}

/** Whether the step being scheduled must ask the gate's question (`StepArgs.admitInStep`). */
export function gateAskedInStep(): boolean {
  const f = folded();
  return f !== undefined && !f.settled;
}

/** The step that asked came back any way but an admission wait (`StepWait`, or an older `AdmissionWait` failure): its statement admitted the job. */
export function admittedInStep(): void {
  const f = folded();
  if (f) f.settled = true;
}

/** The step that asked was not admitted: run the full gate (once for steps refused together). */
export async function gateAfterRefusal(): Promise<void> {
  const f = folded();
  if (!f) return;
  // Once the run is over the next refusal (a later pause, at a later step) runs the gate anew;
  // without `holds` nothing refuses again, as before.
  f.running ??= f.run().then(() => {
    f.settled = true;
    if (f.holds) f.running = undefined;
  });
  await f.running;
}
