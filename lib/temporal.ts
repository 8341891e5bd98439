import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { hostname } from 'node:os';
import { SEARCH_ATTRIBUTE_NAMES } from '../contract/messages.js';
import type { Config } from './config.js';
import { createPayloadCodec, dataConverterOf } from './payload-codec.js';
import { tracingClientInterceptors } from './tracing.js';

export { JobStateKey, JobTypeKey, TenantIdKey } from '../contract/messages.js';

/** Connection options for a local dev server, a self-hosted cluster (mTLS) or Temporal Cloud (API key). */
export type TemporalConnectionOptions = Config['temporalConnection'] & { address: string };

/** Works for both the client `Connection` and the worker's `NativeConnection`. */
export async function connectionOptions(config: Config, address: string): Promise<TemporalConnectionOptions> {
  return { ...config.temporalConnection, address };
}

/**
 * A client for the configured Temporal; `connection` is the concrete one (operator and health
 * services). With `PAYLOAD_CODEC_KEYS` its payloads (signals it sends, results it reads) pass
 * the same AES-GCM codec as the workers' (`lib/payload-codec.ts`).
 */
export async function connectClient(config: Config, address: string): Promise<Client & { connection: Connection }> {
  const connection = await Connection.connect(await connectionOptions(config, address));
  const codec = createPayloadCodec(config.payloadCodecKeys);
  // With tracing on (lib/tracing.ts) each workflow start carries the active trace in its headers.
  const interceptors = { workflow: tracingClientInterceptors() };
  return Object.assign(new Client({ connection, namespace: config.temporalNamespace, interceptors, ...dataConverterOf(codec) }), {
    connection,
  });
}

/**
 * A worker process's identity in Temporal (the SDK's default form, `pid@host`). `npm start`
 * tells its own workers' pollers from those an earlier run left listed by it.
 */
export function workerIdentity(pid: number, host = hostname()): string {
  return `${pid}@${host}`;
}

/**
 * Makes sure the product's search attributes exist on the namespace, also on a server we
 * did not start (where `--search-attribute` flags were never passed). Adding an existing
 * attribute is skipped, so this is idempotent.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const wanted: readonly string[] = SEARCH_ATTRIBUTE_NAMES;
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const have = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = wanted.filter((n) => !have.has(n));
  if (missing.length > 0) {
    const keyword = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((n) => [n, keyword])),
      });
    } catch (err) {
      // Another process may have added them in the meantime; re-check before failing.
      const again = await connection.operatorService.listSearchAttributes({ namespace });
      const still = missing.filter((n) => !(n in (again.customAttributes ?? {})));
      if (still.length > 0)
        throw new Error(`cannot register search attributes ${still.join(', ')}: ${(err as Error).message}`, { cause: err });
    }
  }
  return missing;
}

/**
 * Whether Temporal would accept a job start now, without starting anything (for `/readyz`). A
 * health check passes while a start would still fail: the namespace may be missing, the search
 * attributes unregistered or not yet usable (a production server caches their mapping for
 * ~2 s after registration), or the history service down behind a live frontend. So: a
 * visibility count that names all three attributes (fails on a missing namespace or an
 * unusable attribute), then a describe of a workflow that does not exist, which only the
 * history service can answer NOT_FOUND.
 */
export async function temporalAcceptsJobs(connection: Connection, namespace: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await connection.withDeadline(deadline, () =>
    connection.workflowService.countWorkflowExecutions({
      namespace,
      query: "TenantId = 'readyz' AND JobType = 'readyz' AND JobState = 'readyz'",
    }),
  );
  try {
    await connection.withDeadline(deadline, () =>
      connection.workflowService.describeWorkflowExecution({
        namespace,
        execution: { workflowId: 'durable-jobs-readyz-probe-never-started' },
      }),
    );
  } catch (err) {
    if ((err as { code?: number }).code !== 5) throw err; // 5 = NOT_FOUND: history answered
  }
}

export type Execution = { kind: 'absent' } | { kind: 'running' } | { kind: 'closed'; status: string };

/** The latest run of a workflow ID: absent (never started, or past retention), running or closed. */
export async function execution(client: Client, workflowId: string): Promise<Execution> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return d.status.name === 'RUNNING' ? { kind: 'running' } : { kind: 'closed', status: d.status.name };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { kind: 'absent' };
    throw err;
  }
}
