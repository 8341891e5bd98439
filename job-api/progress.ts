/**
 * `ctx.progress({ done, total, note })` (issue 38 §6): a step says how far it is. The latest
 * report rides on the step's heartbeat (Temporal shows it as the activity's heartbeat details,
 * and the next attempt reads it) and is stored on the job's row at most once a second, so a
 * step that reports in a tight loop costs one small UPDATE a second. The last report is always
 * stored when the step ends. Reports are best effort: a failed write is logged, never the step's
 * failure.
 */
import { ValidationError } from '../lib/errors.js';

import type { ProgressReport, StoredProgress } from '../contract/job-types.js';

export type { ProgressReport, StoredProgress };

/** Stored at most this often per step (and once more at its end). */
export const PROGRESS_WRITE_INTERVAL_MS = 1_000;

const MAX_NOTE = 200;

/** A report checked and copied (never the caller's object, which it may keep changing). */
export function checkedReport(p: ProgressReport): ProgressReport {
  const issues: { path: string; message: string }[] = [];
  const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  if (!finite(p?.done)) issues.push({ path: 'progress.done', message: 'a finite number >= 0' });
  if (p?.total !== undefined && !finite(p.total)) issues.push({ path: 'progress.total', message: 'a finite number >= 0, or absent' });
  if (p?.note !== undefined && (typeof p.note !== 'string' || p.note.length > MAX_NOTE))
    issues.push({ path: 'progress.note', message: `a string of at most ${MAX_NOTE} characters, or absent` });
  if (issues.length > 0) throw new ValidationError('invalid progress report', issues);
  return { done: p.done, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.note !== undefined ? { note: p.note } : {}) };
}

export interface ProgressSink {
  /** Stores the report on the job's row. */
  write(p: StoredProgress): Promise<void>;
  /** The report for the heartbeat's details (called at once with each report). */
  onReport?(p: StoredProgress): void;
  /** A write failed: logged by the caller, never thrown into the step. */
  onError(err: Error): void;
  /** Default `PROGRESS_WRITE_INTERVAL_MS`. */
  intervalMs?: number;
  /** Default `Date.now`. */
  now?: () => number;
}

export interface ProgressReporter {
  report(p: ProgressReport): void;
  /** Stores the last report if it is not stored yet, and stops the timer (the step's end). */
  flush(): Promise<void>;
}

/**
 * One step attempt's reporter. The first report is written at once; later ones wait for the
 * interval since the last write (a trailing timer writes the newest then), and only one write
 * is in flight at a time, so the row sees the reports in order.
 */
export function createProgressReporter(step: string, sink: ProgressSink): ProgressReporter {
  const interval = sink.intervalMs ?? PROGRESS_WRITE_INTERVAL_MS;
  const now = sink.now ?? Date.now;
  let latest: StoredProgress | undefined;
  let stored: StoredProgress | undefined;
  let lastWrite = -Infinity;
  let inFlight: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const writeLatest = (): Promise<void> => {
    if (inFlight) return inFlight;
    if (!latest || latest === stored) return Promise.resolve();
    const p = latest;
    lastWrite = now();
    inFlight = sink
      .write(p)
      .then(() => {
        stored = p;
      })
      .catch((err: Error) => sink.onError(err))
      .finally(() => {
        inFlight = undefined;
        // A report that came in while this one was written goes out at the next slot.
        if (latest !== stored && latest !== p) schedule();
      });
    return inFlight;
  };

  function schedule(): void {
    if (timer) return;
    const wait = Math.max(0, lastWrite + interval - now());
    if (wait === 0 && !inFlight) {
      void writeLatest();
      return;
    }
    timer = setTimeout(
      () => {
        timer = undefined;
        void writeLatest();
      },
      Math.max(wait, 1),
    );
    timer.unref?.();
  }

  return {
    report(p) {
      latest = { ...checkedReport(p), step };
      sink.onReport?.(latest);
      schedule();
    },
    async flush() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (inFlight) await inFlight;
      await writeLatest();
    },
  };
}
