// Dead-letter replay throughput under a concurrency cap, against the cap's theoretical rate.
// N summarize jobs are dead-lettered with a 400 from the simulator; then one replay request
// (`POST /v1/dead-letters/replay`, concurrency C, a rate limit far above it) replays them while
// the simulator holds each upstream answer D ms. If every replay took exactly D, the cap would
// allow C x 1000 / D replays per second; the gap is the per-replay overhead (prepare, a child
// job workflow, finish). The rate limit is set high so that the concurrency cap binds. The peak
// in flight is counted at the simulator (requests on /v1/* at once), not by the code under
// test, and must stay <= C. One replay alone (N=1, C=1) gives a replay's own latency against D,
// which separates the per-replay overhead from how well the cap keeps C busy. Beside each, the
// same N replays by a twin with no Postgres (scripts/bench/bare-workflows.ts `replayTwinWorkflow`:
// the replay's Temporal shape, each child shaped like `summarize`), on a bare worker: what the
// engine's path for one child job costs on this server, apart from ours.
import type { ReplayTwinArgs, ReplayTwinResult } from './bare-workflows.js';
import { upsertTenant } from '../../store/tenants.js';
import { ADMIN_KEY, uid, type BenchStack } from './stack.js';
import { alternate, pool, row, skippedRow, spread, waitUntil, type BenchRow } from './stats.js';

const RATE_PER_MINUTE = 6_000;

class NotAvailable extends Error {}

export async function measureReplay(stack: BenchStack): Promise<BenchRow[]> {
  const n = stack.quick ? 4 : 40;
  const concurrency = stack.quick ? 2 : 5;
  const holdMs = stack.quick ? 300 : 1_000;
  const repeats = stack.quick ? 2 : 5;
  const queue = `bench-replay-${uid()}`;
  const twinQueue = `bench-replay-twin-${uid()}`;
  const [worker, twinWorker] = await Promise.all([stack.startProductWorker(queue), stack.startWorkerChild('bare', twinQueue)]);
  const app = await stack.startApp(queue);
  const rates: number[] = [];
  const twinRates: number[] = [];
  const twinSimPeaks: number[] = [];
  const peaks: number[] = [];
  const simPeaks: number[] = [];
  const single: number[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      // Alternate the order of the three runs.
      const runs = [
        async () => {
          const out = await replayOnce(stack, app, { n, concurrency, holdMs });
          rates.push(out.perSec);
          peaks.push(out.peakRunning);
          simPeaks.push(out.simPeak);
        },
        async () => single.push((await replayOnce(stack, app, { n: 1, concurrency: 1, holdMs })).latencyMs),
        async () => {
          const out = await replayTwinOnce(stack, twinQueue, { n, concurrency, holdMs });
          twinRates.push(out.perSec);
          twinSimPeaks.push(out.simPeak);
        },
      ];
      for (const run of alternate(runs, r)) await run();
      stack.log(
        `  replay repeat ${r + 1}/${repeats}: ${rates.at(-1)!.toFixed(2)} replays/s (peak in flight at the simulator ${simPeaks.at(-1)}, workflow's own count ${peaks.at(-1)}), twin ${twinRates.at(-1)!.toFixed(2)} replays/s (peak ${twinSimPeaks.at(-1)}), one replay alone ${single.at(-1)!.toFixed(0)} ms`,
      );
    }
  } catch (err) {
    if (err instanceof NotAvailable)
      return [skippedRow('replay.throughput', 'replay', 'dead-letter replay throughput', `not available: ${err.message}`)];
    throw err;
  } finally {
    await app.close();
    await Promise.all([worker.stop(), twinWorker.stop()]);
  }
  const theoretical = Math.min(RATE_PER_MINUTE / 60, (concurrency * 1000) / holdMs);
  const capRate = {
    label: `cap's theoretical rate min(${RATE_PER_MINUTE}/min, ${concurrency} x 1000 / ${holdMs} ms)`,
    unit: 'replays/s',
    value: spread([theoretical]),
  };
  return [
    row({
      id: 'replay.throughput',
      section: 'replay',
      figure: `dead-letter replay, N=${n}, concurrency ${concurrency}, upstream held ${holdMs} ms`,
      unit: 'replays/s',
      value: spread(rates),
      baseline: capRate,
      sense: 'higher-better',
      details: { peakRunningByWorkflow: peaks, peakInFlightAtSimulator: simPeaks },
      notes: `first replay start to last replay finish, from the replay workflow's own progress; peak in flight at the simulator ${Math.max(...simPeaks)} (cap ${concurrency}${Math.max(...simPeaks) > concurrency ? ': CAP EXCEEDED' : ''})`,
    }),
    row({
      id: 'replay.vs-twin',
      section: 'replay',
      figure: `dead-letter replay ÷ its twin with no Postgres (the same N=${n}, concurrency ${concurrency}, hold ${holdMs} ms, runs interleaved)`,
      unit: 'replays/s',
      value: spread(rates),
      baseline: { label: "the replay's twin (no Postgres; bare worker)", unit: 'replays/s', value: spread(twinRates) },
      sense: 'higher-better',
      paired: true,
      details: { twinPeakInFlightAtSimulator: twinSimPeaks },
      notes: `our own cost of a replay (prepare, finish, the replay job's Postgres work); the twin itself reaches ${(spread(twinRates).median / theoretical).toFixed(2)}x the cap's rate: the engine's path for one child job (its start, two workflow tasks, an activity task, the parent's workflow task) on this server`,
    }),
    row({
      id: 'replay.twin',
      section: 'replay',
      figure: `the replay's twin (no Postgres), N=${n}, concurrency ${concurrency}, upstream held ${holdMs} ms`,
      unit: 'replays/s',
      value: spread(twinRates),
      baseline: capRate,
      sense: 'higher-better',
      notes: `the engine's floor for this shape on this server; peak in flight at the simulator ${Math.max(...twinSimPeaks)}`,
    }),
    row({
      id: 'replay.peak-in-flight',
      section: 'replay',
      figure: `peak upstream calls in flight at the simulator during the replays (cap ${concurrency})`,
      unit: 'calls',
      value: spread(simPeaks),
      baseline: { label: 'the cap K', unit: 'calls', value: spread([concurrency]) },
      ratio: Math.max(...simPeaks) / concurrency,
      sense: 'lower-better',
      notes: 'ratio = the highest peak of any repeat / K: must be <= 1.00x',
    }),
    row({
      id: 'replay.single-latency',
      section: 'replay',
      figure: 'one replay alone (N=1, concurrency 1): replay start to finish',
      unit: 'ms',
      value: spread(single),
      baseline: { label: 'the upstream hold D', unit: 'ms', value: spread([holdMs]) },
      sense: 'lower-better',
      notes: `a replay's own overhead: median ${(spread(single).median - holdMs).toFixed(0)} ms above D`,
    }),
  ];
}

async function replayOnce(
  stack: BenchStack,
  app: { baseUrl: string; jobs: ReturnType<BenchStack['jobsClient']> },
  o: { n: number; concurrency: number; holdMs: number },
): Promise<{ perSec: number; peakRunning: number; simPeak: number; latencyMs: number }> {
  const tenant = `bench-replay-${uid()}`;
  await upsertTenant(stack.pool, tenant, `key-${tenant}`);
  const admin = async (path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(app.baseUrl + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  };
  const list = await admin(`/v1/dead-letters?state=open&tenantId=${tenant}`);
  if (list.status === 404) throw new NotAvailable('GET /v1/dead-letters answers 404');

  // Dead letters: a definite 400 is not retried, so each job dead-letters after one call.
  await stack.simFault({ path: '/v1/summaries', times: o.n, status: 400 });
  await pool(o.n, 8, (i) =>
    app.jobs.submitJob({
      tenantId: tenant,
      type: 'summarize',
      idempotencyKey: `bench-dl-${tenant}-${i}`,
      input: { text: `dead letter ${i}` },
    }),
  );
  const ids = await waitUntil(
    `${o.n} dead letters for ${tenant}`,
    async () => {
      const r = await admin(`/v1/dead-letters?state=open&tenantId=${tenant}&limit=1000`);
      const rows = (r.body?.deadLetters ?? []) as Array<{ id: string }>;
      return rows.length >= o.n ? rows.map((d) => d.id) : undefined;
    },
    120_000 + o.n * 2_000,
  );

  // A fresh simulator (its peak restarts from what is in flight: nothing), then the holds.
  await stack.simReset();
  await stack.simFault({ path: '/v1/summaries', times: o.n, status: 200, delayMs: o.holdMs });
  const start = await admin('/v1/dead-letters/replay', {
    ids,
    concurrency: o.concurrency,
    ratePerMinute: RATE_PER_MINUTE,
    batchSize: Math.min(100, o.n),
    maxFailures: o.n,
  });
  if (start.status === 404) throw new NotAvailable('POST /v1/dead-letters/replay answers 404');
  if (start.status !== 202) throw new Error(`POST /v1/dead-letters/replay answered ${start.status}: ${JSON.stringify(start.body)}`);
  const replayId = String(start.body.replayId);
  const progress = await waitUntil(
    `replay ${replayId} to finish`,
    async () => {
      const p = await admin(`/v1/dead-letters/replays/${replayId}`);
      return p.status === 200 && ['completed', 'halted', 'stopped'].includes(p.body?.state) ? p.body : undefined;
    },
    120_000 + (o.n * o.holdMs * 4) / o.concurrency,
    250,
  );
  if (progress.state !== 'completed' || progress.counts.succeeded !== o.n) {
    throw new Error(
      `replay ${replayId} ended ${progress.state} with ${JSON.stringify(progress.counts)}${progress.stopReason ? ` (${progress.stopReason})` : ''}`,
    );
  }
  const items = progress.items as Array<{ startedAt?: string; finishedAt?: string }>;
  const first = Math.min(...items.map((i) => Date.parse(i.startedAt!)));
  const last = Math.max(...items.map((i) => Date.parse(i.finishedAt!)));
  const simPeak = (await stack.simEffects()).peakInFlight;
  return { perSec: o.n / Math.max((last - first) / 1000, 1e-3), peakRunning: progress.peakRunning, simPeak, latencyMs: last - first };
}

/** The same N replays' Temporal shape with no Postgres (`replayTwinWorkflow`), timed as `replayOnce` times the product's. */
async function replayTwinOnce(
  stack: BenchStack,
  taskQueue: string,
  o: { n: number; concurrency: number; holdMs: number },
): Promise<{ perSec: number; simPeak: number }> {
  const run = `replay-twin-${uid()}`;
  await stack.simReset();
  await stack.simFault({ path: '/v1/summaries', times: o.n, status: 200, delayMs: o.holdMs });
  const args: ReplayTwinArgs = {
    ids: Array.from({ length: o.n }, (_, i) => `${run}-${i}`),
    concurrency: o.concurrency,
    providerUrl: stack.sim.url,
    tenantId: run,
    text: 'replay twin',
  };
  const h = await stack.temporal.workflow.start('replayTwinWorkflow', { taskQueue, workflowId: run, args: [args] });
  const out = (await h.result()) as ReplayTwinResult;
  const first = Math.min(...out.items.map((i) => i.startedAt));
  const last = Math.max(...out.items.map((i) => i.finishedAt));
  const simPeak = (await stack.simEffects()).peakInFlight;
  return { perSec: o.n / Math.max((last - first) / 1000, 1e-3), simPeak };
}
