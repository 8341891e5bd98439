import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { createPool } from '../../lib/db.js';
import { buildApp } from '../../server/app.js';
import { createQueueWorker } from '../../workers/worker.js';
import { ADMIN_KEY, startHarness, waitFor, workflowBundle, type Harness } from '../support/harness.js';
import { defaultJobRegistry } from '../../jobs/index.js';

// Arrivals faster than completions (no worker), then the reverse (one worker that takes one
// attempt at a time, each held ~1.2 s by the simulator): a steady, known drain.
const JOBS = 60;
let h: Harness;
let conn: NativeConnection | undefined;
let worker: Worker | undefined;
let run: Promise<void> | undefined;
const ids: string[] = [];

beforeAll(async () => {
  h = await startHarness('health-figures', { workers: 0 });
});
afterAll(async () => {
  worker?.shutdown();
  await run?.catch(() => undefined);
  await conn?.close();
  await h?.close();
});

const admin = (path: string) => h.api(path, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
const health = async () => (await admin('/v1/admin/queue-health')).body;

describe('queue health under a generated load', () => {
  it('is for operators only', async () => {
    expect((await h.api('/v1/admin/queue-health')).status).toBe(401);
    expect((await admin('/v1/admin/queue-health?history=abc')).status).toBe(400);
  });

  it('arrivals faster than completions: the backlog grows, its age rises, the ETA says never', async () => {
    for (let i = 0; i < JOBS; i++) {
      const r = await h.submit('summarize', { text: `load ${i}` });
      expect(r.status).toBe(202);
      ids.push(r.body.jobId);
    }
    const f = await waitFor('the backlog to show every job', async () => {
      const x = await health();
      return x.backlog.active === JOBS ? x : undefined;
    });
    expect(f.jobTypes.summarize.backlog.queued).toBe(JOBS);
    expect(f.rates.arrivalsPerMinute['1m']).toBe(JOBS);
    expect(f.rates.completionsPerMinute['1m']).toBe(0);
    expect(f.rates.netDrainPerMinute['1m']).toBe(-JOBS);
    expect(f.recovery).toMatchObject({ state: 'never', etaSeconds: null, words: `backlog ${JOBS} growing at ${JOBS}/min: never` });
    expect(f.backlog.oldestWaitingAgeSeconds).toBeGreaterThan(0);
    expect(f.history.arrivals.reduce((a: number, b: number) => a + b, 0)).toBe(JOBS);
    expect(f.history.unfinished.at(-1)).toBe(JOBS);

    // Temporal's own statistics: the workflow tasks wait on the task queue, nobody polls it.
    const tq = await waitFor(
      'Temporal to report the backlog',
      async () => {
        const t = (await health()).taskQueues[0];
        return t.workflow?.backlogCount > 0 ? t : undefined;
      },
      30_000,
      1_000,
    );
    expect(tq.name).toBe(h.taskQueue);
    expect(tq.workflow.pollers).toBe(0);

    // A second API process on the same database reports the same figures (nothing in memory).
    const pool2 = createPool(h.databaseUrl, h.log);
    const app2 = buildApp({
      jobTypes: defaultJobRegistry,
      pool: pool2,
      temporal: h.temporal,
      jobs: createJobsClient({ jobs: defaultJobRegistry, pool: pool2, temporal: h.temporal, taskQueue: h.taskQueue }),
      log: h.log,
      adminApiKey: ADMIN_KEY,
      version: 'test',
      webhookSecrets: {},
    });
    try {
      const [a, b] = await Promise.all([
        health(),
        app2.inject({ url: '/v1/admin/queue-health', headers: { authorization: `Bearer ${ADMIN_KEY}` } }).then((r) => r.json()),
      ]);
      for (const k of ['backlog', 'rates', 'recovery', 'deadLetters', 'outbox', 'leaseExpirations'] as const) {
        const strip = (o: any) => JSON.parse(JSON.stringify(o, (key, v) => (/AgeSeconds$/.test(key) ? undefined : v)));
        expect(strip(b[k])).toEqual(strip(a[k]));
      }
    } finally {
      await app2.close();
      await pool2.end();
    }

    // The same figures in Prometheus form.
    const m = await fetch(`${h.opsUrl}/metrics`).then((r) => r.text());
    expect(m).toContain(`durable_jobs_backlog_jobs{job_type="summarize",state="queued"} ${JOBS}`);
    expect(m).toContain('durable_jobs_recovery_eta_seconds{window="1m"} +Inf');
    expect(m).toContain('durable_jobs_health_up 1');
  });

  it('the reverse: completions outpace arrivals and the ETA is right within a tolerance', async () => {
    // Wait until the submissions leave the one-minute window: from here on, only completions move.
    const quiet = await waitFor(
      'the arrivals to leave the 1-minute window',
      async () => {
        const x = await health();
        return x.rates.arrivalsPerMinute['1m'] === 0 ? x : undefined;
      },
      120_000,
      2_000,
    );
    expect(quiet.rates.arrivalsPerMinute['5m']).toBeCloseTo(JOBS / 5, 5);

    await h.simFault({ path: '/v1/summaries', times: JOBS, status: 200, delayMs: 1_200 });
    conn = await NativeConnection.connect({ address: inject('temporalAddress') });
    worker = await createQueueWorker({
      connection: conn,
      namespace: inject('temporalNamespace'),
      taskQueue: h.taskQueue,
      pool: h.pool,
      providerUrl: h.sim.url,
      log: h.log,
      codeVersion: 'test',
      workflowBundle: await workflowBundle(),
      maxConcurrentActivityTaskExecutions: 1,
      identity: 'health-drain-worker',
    });
    run = worker.run();
    const drainStart = Date.now();

    // Once the one-minute window holds only the steady drain, its ETA should come true.
    await waitFor('a full minute of draining', async () => Date.now() - drainStart > 62_000, 120_000, 1_000);
    const s = await health();
    expect(s.recovery.state).toBe('draining');
    expect(s.rates.netDrainPerMinute['1m']).toBeGreaterThan(0);
    expect(s.recovery.words).toMatch(/^backlog \d+ draining at [\d.,]+\/min: about \d+ (s|min)$/);
    const predictedMs = s.recovery.etaSeconds * 1000;
    const sampledAt = Date.now();
    await waitFor('the backlog to drain', async () => (await health()).backlog.active === 0, 240_000, 500);
    const actualMs = Date.now() - sampledAt;
    // Tolerance: a third of the ETA plus 5 s (the drain is steady but attempts are discrete).
    expect(Math.abs(actualMs - predictedMs)).toBeLessThan(predictedMs / 3 + 5_000);

    const done = await health();
    expect(done.recovery).toMatchObject({ state: 'empty', words: 'backlog empty' });
    expect(done.jobTypes.summarize.finished15m.succeeded).toBe(JOBS);
    expect(done.jobTypes.summarize.attemptsPerJob).toEqual({ avg: 1, max: 1 });
    expect(done.rates.completionsPerMinute['15m']).toBeCloseTo(JOBS / 15, 5);
    // They waited far longer in the queue than they ran.
    expect(done.jobTypes.summarize.queueSeconds.p50).toBeGreaterThan(done.jobTypes.summarize.executionSeconds.p95);
    expect(done.history.unfinished.at(-1)).toBe(0);
    expect(Math.max(...done.history.unfinished)).toBe(JOBS);
  }, 300_000);

  it('shows queue time and execution time separately on each job, in UTC', async () => {
    const last = await h.waitForStatus(ids.at(-1)!, 'succeeded');
    expect(last.createdAt).toMatch(/Z$/);
    expect(last.firstStartedAt).toMatch(/Z$/);
    expect(last.finishedAt).toMatch(/Z$/);
    expect(last.queuedMs).toBe(Date.parse(last.firstStartedAt) - Date.parse(last.createdAt));
    // One attempt, no slot wait: its execution span is first start → finish (measured in the
    // worker, so within a database round trip of the row's timestamps).
    expect(Math.abs(last.executionMs - (Date.parse(last.finishedAt) - Date.parse(last.firstStartedAt)))).toBeLessThanOrEqual(250);
    expect(last.queuedMs).toBeGreaterThan(60_000);
    expect(last.executionMs).toBeGreaterThanOrEqual(1_000); // the simulator held the call 1.2 s
    expect(last.executionMs).toBeLessThan(last.queuedMs);
  });
});
