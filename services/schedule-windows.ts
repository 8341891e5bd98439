/**
 * The state of each window of a scheduled job type, for the console (issue 38 §8): pure, so a
 * unit test covers every branch. A window is
 * - `filled`: its trigger (the Schedule's, a manual one or a backfill) started every tenant's job;
 * - `late-filled`: the compensation scan found it missed and started its jobs;
 * - `skipped`: it has no jobs and none will come, with the reason: the scan failed on it (the
 *   error its run recorded, `scan_runs.error_details` "window <start>: …"), it fired while an
 *   operator had the Schedule paused (an audited pause: the scan does not undo it), it lies
 *   before the scan's fill lookback, or before the Schedule existed;
 * - `missed`: no jobs yet, the next compensation scan fills it;
 * - `due`: it fired less than the scan's grace period ago; its trigger is still at work.
 */
import type { ScheduleWindow } from '../contract/schedule-window.js';
import type { ScheduleActionRow, WindowRow } from '../store/schedules.js';

export const WINDOW_STATES = ['filled', 'late-filled', 'skipped', 'missed', 'due'] as const;
export type WindowState = (typeof WINDOW_STATES)[number];

export interface WindowView {
  start: string;
  end: string;
  state: WindowState;
  reason: string;
  /** Who saw it first (schedule, manual, scan), when recorded. */
  source?: WindowRow['first_source'];
  jobs?: number;
  triggers?: number;
  filledAt?: string;
}

export interface WindowFacts {
  /** The windows the Schedule's spec fired for (its matching times), with the time each fired. */
  expected: Array<ScheduleWindow & { firedAt: number }>;
  rows: WindowRow[];
  now: number;
  scheduleCreatedAt: number | null;
  fillLookbackMs: number;
  /** The scan's grace before a fired window counts as missed (its default 5 min). */
  graceMs: number;
  /** Recent scan runs' step errors, newest first. */
  scanErrors: Array<{ details: string[] }>;
  /** The operators' pauses of the Schedule (`pauseSpans`). */
  pauses: PauseSpan[];
}

/**
 * An operator's pause of a Schedule through durable-jobs (audited in `schedule_actions`, with
 * its reason), from the pause to the unpause after it (`to` null: paused still). A window
 * that fired inside one was not run on purpose: the compensation scan leaves it to a
 * backfill. A pause made elsewhere (the Temporal UI, the CLI, a declaration created paused)
 * has no audit row and its windows count as missed: the scan fills them (drill item 6).
 */
export interface PauseSpan {
  from: number;
  to: number | null;
  by: string;
  reason: string | null;
}

/** The pause spans of a Schedule from its pause and unpause actions, oldest first. */
export function pauseSpans(actions: Array<Pick<ScheduleActionRow, 'action' | 'actor' | 'reason' | 'at'>>): PauseSpan[] {
  const spans: PauseSpan[] = [];
  let open: PauseSpan | undefined;
  for (const a of actions) {
    if (a.action === 'paused' && !open) {
      open = { from: a.at.getTime(), to: null, by: a.actor, reason: a.reason };
      spans.push(open);
    } else if (a.action === 'unpaused' && open) {
      open.to = a.at.getTime();
      open = undefined;
    }
  }
  return spans;
}

/** The operator's pause that held the Schedule when it fired at `t`, if any. */
export function pauseAt(spans: PauseSpan[], t: number): PauseSpan | undefined {
  return spans.find((s) => s.from <= t && (s.to === null || t < s.to));
}

const DAY = 86_400_000;
const span = (ms: number) => (ms % DAY === 0 ? `${ms / DAY} d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${ms / 1000} s`);

/** The newest scan error about this window, or about the whole missed-window step. */
function scanErrorFor(start: string, errors: WindowFacts['scanErrors']): string | undefined {
  for (const run of errors)
    for (const d of run.details) {
      if (d.startsWith(`window ${start}: `)) return d.slice(`window ${start}: `.length);
      if (d.startsWith('missed windows: ')) return d.slice('missed windows: '.length);
    }
  return undefined;
}

function recorded(row: WindowRow, f: WindowFacts): Pick<WindowView, 'state' | 'reason'> {
  if (row.filled_at && row.first_source === 'scan')
    return { state: 'late-filled', reason: `the compensation scan found it missed and started its jobs at ${row.filled_at.toISOString()}` };
  if (row.filled_at) return { state: 'filled', reason: row.first_source === 'manual' ? 'by a manual trigger' : 'by the Schedule' };
  const err = scanErrorFor(row.window_start.toISOString(), f.scanErrors);
  if (err) return { state: 'skipped', reason: `the compensation scan could not fill it: ${err}` };
  return { state: 'missed', reason: 'seen, but not every tenant has its job yet: the next compensation scan completes it' };
}

function unrecorded(w: WindowFacts['expected'][number], f: WindowFacts): Pick<WindowView, 'state' | 'reason'> {
  const err = scanErrorFor(w.start, f.scanErrors);
  if (err) return { state: 'skipped', reason: `the compensation scan could not fill it: ${err}` };
  const pause = pauseAt(f.pauses, w.firedAt);
  if (pause)
    return {
      state: 'skipped',
      reason: `the Schedule was paused by ${pause.by}${pause.reason ? ` (${pause.reason})` : ''}: backfill it to run it`,
    };
  if (w.firedAt < f.now - f.fillLookbackMs)
    return { state: 'skipped', reason: `older than the scan's fill lookback (${span(f.fillLookbackMs)}): backfill it to run it` };
  if (f.scheduleCreatedAt !== null && w.firedAt < f.scheduleCreatedAt)
    return { state: 'skipped', reason: 'before the Schedule was created (the scan fills from then on): backfill it to run it' };
  if (w.firedAt > f.now - f.graceMs) return { state: 'due', reason: 'fired less than the scan grace ago: its trigger is at work' };
  return { state: 'missed', reason: 'no job yet: the next compensation scan fills it' };
}

/** Every expected or recorded window, newest first, with its state and why. */
export function windowStates(f: WindowFacts): WindowView[] {
  const byStart = new Map<string, WindowView>();
  for (const w of f.expected) byStart.set(w.start, { start: w.start, end: w.end, ...unrecorded(w, f) });
  for (const row of f.rows) {
    const start = row.window_start.toISOString();
    byStart.set(start, {
      start,
      end: row.window_end.toISOString(),
      ...recorded(row, f),
      source: row.first_source,
      jobs: row.jobs ?? 0,
      triggers: row.triggers,
      ...(row.filled_at ? { filledAt: row.filled_at.toISOString() } : {}),
    });
  }
  return [...byStart.values()].sort((a, b) => (a.start < b.start ? 1 : a.start > b.start ? -1 : 0));
}
