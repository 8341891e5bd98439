import type pg from 'pg';
import { insertIntent, markWorkflowStarted, markWorkflowsStarted, type NewIntent } from '../store/intents.js';

/**
 * Records `workflow_started_at` for intents whose workflow start succeeded, off the request's
 * path: the marks of one window (`windowMs`) are written in one statement, each with the time
 * its start returned (the database clock minus how long it waited here). The mark is evidence
 * (the timeline's intake stage, the guard that stops a failed duplicate from removing a started
 * job's row): the job itself is already durable in Temporal. A mark lost with the process (a
 * SIGKILL inside the window, Postgres down at the flush) is written by the compensation scan,
 * which finds the run (README "Intake").
 *
 * `windowMs` 0: each mark is written before the call returns, as one statement of its own.
 */
export interface StartMarks {
  /** Records that this intent's workflow runs; resolves at once unless the window is 0. */
  add(intent: NewIntent): Promise<void>;
  /** Whether this intent's start succeeded here and its mark is still gathering. */
  has(jobId: string): boolean;
  /** Writes the pending marks now; the client's `close()`. */
  flush(): Promise<void>;
}

/** Marks in one statement at most; more wait for the next. */
const MAX_BATCH = 500;

/**
 * One mark, now: written again if a concurrent request whose start failed removed the row (the
 * workflow exists, so its intent must too). Failures are left to the scan.
 */
export async function markStarted(pool: pg.Pool, intent: NewIntent): Promise<void> {
  try {
    if (!(await markWorkflowStarted(pool, intent.jobId))) {
      await insertIntent(pool, intent);
      await markWorkflowStarted(pool, intent.jobId);
    }
  } catch {
    /* the workflow runs; the compensation scan records the start */
  }
}

export function createStartMarks(pool: pg.Pool, windowMs: number): StartMarks {
  const pending = new Map<string, { intent: NewIntent; at: number }>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  /** The marks of the batch being written. */
  const writing = new Set<string>();

  async function writeBatch(): Promise<void> {
    const batch = [...pending.values()].slice(0, MAX_BATCH);
    if (batch.length === 0) return;
    for (const m of batch) {
      pending.delete(m.intent.jobId);
      writing.add(m.intent.jobId);
    }
    const now = Date.now();
    try {
      const marked = await markWorkflowsStarted(
        pool,
        batch.map((m) => ({ jobId: m.intent.jobId, agoMs: now - m.at })),
      );
      for (const m of batch) if (!marked.has(m.intent.jobId)) await markStarted(pool, m.intent);
    } catch {
      /* Postgres is down: the compensation scan records these starts */
    } finally {
      for (const m of batch) writing.delete(m.intent.jobId);
    }
  }

  function schedule(): void {
    if (timer || running || pending.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = writeBatch().finally(() => {
        running = undefined;
        schedule();
      });
    }, windowMs);
  }

  return {
    async add(intent) {
      if (windowMs === 0) return markStarted(pool, intent);
      pending.set(intent.jobId, { intent, at: Date.now() });
      schedule();
    },
    has: (jobId) => pending.has(jobId) || writing.has(jobId),
    async flush() {
      const stopTimer = () => {
        if (timer) clearTimeout(timer);
        timer = undefined;
      };
      stopTimer();
      while (running || pending.size > 0) {
        if (running) await running;
        else {
          running = writeBatch().finally(() => {
            running = undefined;
          });
        }
      }
      // A batch the timer started may have scheduled another before it ended: nothing is left for it.
      stopTimer();
    },
  };
}
