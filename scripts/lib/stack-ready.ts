import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

/**
 * When `npm start` may say "the stack is up": its printed `try: curl` line must work when
 * pasted at once, so the API must answer `/readyz` with 200 (it listens only seconds after
 * its process starts), and a job must be able to run, so at least one of the stack's own
 * workers must poll the task queue. Pollers that Temporal still lists from an earlier run
 * (it keeps them for minutes) are not ours: only the identities of this run's worker
 * processes count.
 */

/** One look at the stack. */
export interface StackObservation {
  /** HTTP status of `GET /readyz`, or why it did not answer (connection refused while the API starts). */
  readyz: number | string;
  /** Identities of the workers polling the task queue for workflow tasks, as Temporal lists them. */
  pollers: readonly string[];
}

export interface StackExpectation {
  /** The stack's worker processes (`WORKERS`); 0 = nothing to wait for on the worker side. */
  workers: number;
  /** Identities of this run's worker processes (`workerIdentity(pid)` of each child). */
  ownIdentities: readonly string[];
  taskQueue: string;
}

/** What the stack still lacks, in words; empty when it is up. */
export function stackWaitingFor(o: StackObservation, e: StackExpectation): string[] {
  const missing: string[] = [];
  if (o.readyz !== 200) missing.push(`the API's /readyz to answer 200 (${typeof o.readyz === 'number' ? `now ${o.readyz}` : o.readyz})`);
  if (e.workers > 0) {
    const own = new Set(e.ownIdentities);
    if (!o.pollers.some((p) => own.has(p))) missing.push(`a worker to poll the task queue ${e.taskQueue}`);
  }
  return missing;
}

/** The probes the wait uses: real HTTP and Temporal in `npm start`, fakes in unit tests. */
export interface StackProbes {
  readyz(): Promise<number | string>;
  pollers(): Promise<readonly string[]>;
}

export interface WaitForStackOptions extends StackExpectation {
  probes: StackProbes;
  /** Between looks. Default 250 ms: the banner appears at most this long after the stack is up. */
  everyMs?: number;
  /** Says what the stack still lacks, after `reportAfterMs` of waiting and every `reportAfterMs` after. Default 15 s. */
  report?: (waitingFor: string[]) => void;
  reportAfterMs?: number;
  /** Ends the wait (Ctrl-C while starting): resolves with what was still missing. */
  signal?: AbortSignal;
}

/**
 * Looks at the stack until nothing is missing. No overall timeout: a part that never comes up
 * (an API in a restart loop) is reported every `reportAfterMs`, and Ctrl-C ends the wait.
 * Resolves with what is still missing: empty when the stack is up, non-empty only when aborted.
 */
export async function waitForStack(o: WaitForStackOptions): Promise<string[]> {
  const everyMs = o.everyMs ?? 250;
  const reportAfterMs = o.reportAfterMs ?? 15_000;
  let nextReport = Date.now() + reportAfterMs;
  // Once /readyz said 200 it is not asked again: each look is a request the API logs, and the
  // worker can take seconds more (bundling its workflows).
  let apiReady = false;
  for (;;) {
    const [readyz, pollers]: [number | string, readonly string[]] = await Promise.all([
      apiReady ? 200 : o.probes.readyz().catch((e: Error) => e.message),
      o.probes.pollers().catch(() => [] as string[]),
    ]);
    apiReady = readyz === 200;
    const missing = stackWaitingFor({ readyz, pollers }, o);
    if (missing.length === 0 || o.signal?.aborted) return missing;
    if (o.report && Date.now() >= nextReport) {
      o.report(missing);
      nextReport = Date.now() + reportAfterMs;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, everyMs);
      o.signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/** `GET {api}/readyz`: its status, or the reason it did not answer (each look is bounded to 2 s). */
export function readyzProbe(api: string): () => Promise<number | string> {
  return async () => {
    try {
      const res = await fetch(`${api}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      return res.status;
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      return cause?.code === 'ECONNREFUSED' ? 'not listening yet' : (err as Error).message;
    }
  };
}

/** The identities Temporal lists as polling `taskQueue` for workflow tasks. */
export function pollersProbe(temporal: Client, taskQueue: string): () => Promise<readonly string[]> {
  return async () => {
    const res = await temporal.connection.withDeadline(Date.now() + 2_000, () =>
      temporal.workflowService.describeTaskQueue({
        namespace: temporal.options.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    );
    return (res.pollers ?? []).map((p) => p.identity ?? '').filter((id) => id !== '');
  };
}
