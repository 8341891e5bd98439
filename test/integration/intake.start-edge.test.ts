import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { inputHash, jobIdFor, keyHash } from '../../lib/ids.js';
import { insertIntent } from '../../store/intents.js';
import type { ScanReport } from '../../contract/scan.js';
import { createJobsClient } from '../../services/intake.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import type { RetentionReport } from '../../contract/retention.js';
import { startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

let h: Harness;
let proxy: TcpProxy;
let connection: Connection;
beforeAll(async () => {
  h = await startHarness('start-edge');
  proxy = await startTcpProxy(inject('temporalAddress'));
});
afterAll(async () => {
  await connection?.close();
  await proxy?.close();
  await h?.close();
});

const text = { text: 'The start timed out. The job exists anyway.' };
const intentOf = async (jobId: string) =>
  (await h.pool.query<{ workflow_started_at: Date | null }>('SELECT workflow_started_at FROM job_intents WHERE job_id = $1', [jobId]))
    .rows[0];

describe('intake: a start whose outcome the client did not hear', () => {
  it('answers 202 with the job when workflow.start timed out on the client but the server created the run', async () => {
    // A Temporal connection through a proxy that holds the server's answers: the start request
    // reaches the server and is processed; its answer arrives only after the client's deadline.
    let startFailed!: (err: unknown) => void;
    const failedStart = new Promise<unknown>((resolve) => (startFailed = resolve));
    const observeStart: WorkflowClientInterceptor = {
      async start(input, next) {
        try {
          return await next(input);
        } catch (err) {
          startFailed(err);
          throw err;
        }
      },
    };
    connection = await Connection.connect({ address: proxy.address });
    const temporal = new Client({ connection, namespace: h.temporal.options.namespace, interceptors: { workflow: [observeStart] } });
    const jobs = createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal, taskQueue: h.taskQueue, startTimeoutMs: 3_000 });
    const key = `slow-start-${uid()}`;
    const jobId = jobIdFor(TENANTS.a.id, 'summarize', key);

    proxy.holdResponses();
    const submitted = jobs.submitJob({ tenantId: TENANTS.a.id, type: 'summarize', idempotencyKey: key, input: text });
    submitted.catch(() => undefined); // awaited below; keeps an early rejection from going unhandled
    const err = (await failedStart) as { code?: number; cause?: { code?: number } };
    expect(err.code ?? err.cause?.code).toBe(4); // gRPC DEADLINE_EXCEEDED: a real client-side timeout
    // ...while the server did create the run.
    await waitFor('the run to exist on the server', () =>
      h.temporal.workflow
        .getHandle(jobId)
        .describe()
        .then(
          () => true,
          () => false,
        ),
    );
    proxy.releaseResponses();

    const result = await submitted;
    expect(result).toMatchObject({ jobId, status: 'queued', replayed: false });
    expect((await intentOf(jobId))?.workflow_started_at).toBeInstanceOf(Date);
    const done = await h.waitForStatus(jobId, 'succeeded');
    expect(done.result.summary).toBe('The start timed out.');
    // The same key again is the same job.
    const again = await h.submit('summarize', text, { key });
    expect(again.status).toBe(200);
    expect(again.body.jobId).toBe(jobId);
  });
});

/** The real retention cleanup, with the job finished 40 days ago (past the 30-day period). */
async function retireFinishedJob(jobId: string): Promise<RetentionReport> {
  await h.pool.query(`UPDATE job_intents SET finished_at = now() - interval '40 days' WHERE job_id = $1`, [jobId]);
  const retention = loadConfig({}, { jobTypes: defaultJobRegistry.names, mode: 'dev' }).retention;
  return (await h.temporal.workflow.execute('retentionCleanup', {
    taskQueue: h.taskQueue,
    workflowId: `retention-${uid()}`,
    args: [{ days: retention.days, batchSize: retention.batchSize }],
  })) as RetentionReport;
}

describe('intake: a key whose earlier job retention deleted', () => {
  it('starts a new run under the same job ID instead of claiming a start that did not happen', async () => {
    const key = `reused-after-retention-${uid()}`;
    const first = await h.submit('summarize', text, { key });
    expect(first.status).toBe(202);
    const jobId = first.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');
    await h.temporal.workflow.getHandle(jobId).result();
    const firstRun = (await h.temporal.workflow.getHandle(jobId).describe()).runId;

    // The real retention cleanup, with the job finished 40 days ago (past the 30-day period):
    // the job's rows go, its closed run stays in Temporal (the namespace's own retention).
    const report = await retireFinishedJob(jobId);
    expect(report.job_intents).toBe(1);
    expect(await intentOf(jobId)).toBeUndefined();

    // The same key is a new submission: a new job under the same ID, which really runs.
    const again = await h.submit('summarize', text, { key });
    expect(again.status).toBe(202);
    expect(again.body.jobId).toBe(jobId);
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 60_000);
    expect(done.attempts).toBe(1);
    const secondRun = await h.temporal.workflow.getHandle(jobId).describe();
    expect(secondRun.runId).not.toBe(firstRun);
  });

  it('the compensation scan also starts a new run for an unstarted intent over an older closed run', async () => {
    const key = `scan-after-retention-${uid()}`;
    const first = await h.submit('summarize', text, { key });
    const jobId = first.body.jobId as string;
    await h.waitForStatus(jobId, 'succeeded');
    await h.temporal.workflow.getHandle(jobId).result();
    const firstRun = (await h.temporal.workflow.getHandle(jobId).describe()).runId;
    await retireFinishedJob(jobId);
    // What a lost start of the new submission leaves: its intent, committed, never started
    // (created 30 minutes on, so it is clearly younger than the closed run; the scan runs "in an hour").
    await insertIntent(h.pool, {
      jobId,
      tenantId: TENANTS.a.id,
      jobType: 'summarize',
      keyHash: keyHash(TENANTS.a.id, key),
      inputHash: inputHash('summarize', text),
      input: text,
      priority: 'normal',
    });
    await h.pool.query(`UPDATE job_intents SET created_at = now() + interval '30 minutes' WHERE job_id = $1`, [jobId]);

    const report = (await h.temporal.workflow.execute('compensationScan', {
      taskQueue: h.taskQueue,
      workflowId: `scan-${uid()}`,
      args: [{ schedules: [], now: new Date(Date.now() + 3_600_000).toISOString() }],
    })) as ScanReport;
    expect(report.intentsStarted).toBe(1);
    const done = await h.waitForStatus(jobId, 'succeeded', 'a', 60_000);
    expect(done.attempts).toBe(1);
    expect((await h.temporal.workflow.getHandle(jobId).describe()).runId).not.toBe(firstRun);
  });
});
