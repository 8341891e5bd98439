// The cost of effect bookkeeping on the real `summarize` path: jobs run one at a time through
// a product worker (a child process, its Postgres statements counted at its client), and
// beside each one a twin workflow whose second activity makes the same upstream call with no
// bookkeeping (scripts/bench/bare-workflows.ts). From each workflow's history, the duration of
// the activity that made the call (the longest one: ActivityTaskStarted to Completed, by the
// server's clock); bookkeeping added = product p50 - twin p50. Its baseline is the time of two
// one-row commits (synchronous_commit on) measured between the jobs on the same Postgres: the
// target says the bookkeeping should cost about what two commits cost. The same two commits are
// also timed inside the worker process (on its own pool, between the jobs): the effect's
// statements are timed there, so that baseline shares their client stack and event loop. No product function is
// called directly, so renaming the store or activity functions does not break this. The summarize step's effect
// goes through the adapter path: `ctx.effect(step, path, body)` is `providerAdapter` over the worker's provider,
// an `httpUpstream` (activities/provider.ts); the adapter's own cost is the `effects.adapter` row (adapter-cost.ts).
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { upsertTenant } from '../../store/tenants.js';
import { twinStartOptions } from './throughput.js';
import { diffPg, type PgCounters } from './pg-probe.js';
import { uid, type BenchStack } from './stack.js';
import { alternate, percentiles, row, spread, timed, type BenchRow } from './stats.js';
import { measureAdapterCost } from './adapter-cost.js';

const TEXT = 'Effect recording benchmark: a short text to summarize.';
const { EventType } = proto.temporal.api.enums.v1;

export async function measureEffectCost(stack: BenchStack): Promise<BenchRow[]> {
  const m = stack.quick ? 5 : 40;
  const repeats = stack.quick ? 2 : 5;
  const pq = `bench-effects-${uid()}`;
  const bq = `bench-effects-twin-${uid()}`;
  const tenant = `bench-effects-${uid()}`;
  await upsertTenant(stack.pool, tenant, `key-${tenant}`);
  await stack.pool.query('CREATE TABLE IF NOT EXISTS bench_one_row (id bigserial PRIMARY KEY, v integer NOT NULL)');
  const [product, twin] = await Promise.all([stack.startWorkerChild('product', pq), stack.startWorkerChild('bare', bq)]);
  const jobs = stack.jobsClient(pq);
  const series = { product: [] as number[], twin: [] as number[], commits: [] as number[] };
  const perRepeat = {
    product: [] as number[],
    twin: [] as number[],
    added: [] as number[],
    commits2: [] as number[],
    workerCommits2: [] as number[],
    effectStatements: [] as number[],
  };
  const counts = { effectCommits: [] as number[], writeCommits: [] as number[], roundTrips: [] as number[], pgWaitMs: [] as number[] };
  let stepType = '';
  try {
    const runProduct = async (tag: string): Promise<number> => {
      const r = await jobs.submitJob({ tenantId: tenant, type: 'summarize', idempotencyKey: `effects-${tag}`, input: { text: TEXT } });
      const outcome = (await stack.temporal.workflow.getHandle(r.jobId).result()) as { state?: string };
      if (outcome?.state !== 'succeeded') throw new Error(`summarize job ${r.jobId} ended ${JSON.stringify(outcome?.state)}`);
      const a = await callActivity(stack.temporal, r.jobId);
      stepType = a.type;
      return a.ms;
    };
    const runTwin = async (tag: string): Promise<number> => {
      const id = `effects-twin-${tag}`;
      const h = await stack.temporal.workflow.start('twinWorkflow', {
        ...twinStartOptions(tenant, bq, id, id),
        args: [{ providerUrl: stack.sim.url, key: id, text: TEXT }],
      });
      await h.result();
      return (await callActivity(stack.temporal, id)).ms;
    };
    const twoCommits = async (): Promise<number> =>
      (
        await timed(async () => {
          await stack.pool.query('INSERT INTO bench_one_row (v) VALUES (1)');
          await stack.pool.query('INSERT INTO bench_one_row (v) VALUES (2)');
        })
      ).ms;
    const workerTwoCommits = async (): Promise<number> => {
      await product.command('commits2');
      const ms = product.counter.commits2Ms;
      if (ms === undefined) throw new Error('the product worker child did not time two commits');
      return ms;
    };
    for (let i = 0; i < 3; i++) {
      await runProduct(`warm-${uid()}`);
      await runTwin(`warm-${uid()}`);
      await twoCommits();
      await workerTwoCommits();
    }
    for (let r = 0; r < repeats; r++) {
      const p: number[] = [];
      const t: number[] = [];
      const c: number[] = [];
      const wc: number[] = [];
      const e: number[] = [];
      let productPart: PgCounters = { roundTrips: 0, waitMs: 0, commits: 0, writeCommits: 0, effectCommits: 0, effectWaitMs: 0 };
      for (let i = 0; i < m; i++) {
        for (const side of alternate(['product', 'twin', 'commits', 'workerCommits'] as const, i + r)) {
          if (side === 'product') {
            const before = await product.fresh();
            p.push(await runProduct(`${r}-${i}-${uid()}`));
            const d = diffPg(before as PgCounters, (await product.fresh()) as PgCounters);
            e.push(d.effectWaitMs);
            productPart = {
              roundTrips: productPart.roundTrips + d.roundTrips,
              waitMs: productPart.waitMs + d.waitMs,
              commits: productPart.commits + d.commits,
              writeCommits: productPart.writeCommits + d.writeCommits,
              effectCommits: productPart.effectCommits + d.effectCommits,
              effectWaitMs: productPart.effectWaitMs + d.effectWaitMs,
            };
          } else if (side === 'twin') t.push(await runTwin(`${r}-${i}-${uid()}`));
          else if (side === 'commits') c.push(await twoCommits());
          else wc.push(await workerTwoCommits());
        }
      }
      series.product.push(...p);
      series.twin.push(...t);
      series.commits.push(...c);
      const pp = percentiles(p).p50;
      const tp = percentiles(t).p50;
      perRepeat.product.push(pp);
      perRepeat.twin.push(tp);
      perRepeat.added.push(pp - tp);
      perRepeat.commits2.push(percentiles(c).p50);
      perRepeat.workerCommits2.push(percentiles(wc).p50);
      perRepeat.effectStatements.push(percentiles(e).p50);
      counts.effectCommits.push(productPart.effectCommits / m);
      counts.writeCommits.push(productPart.writeCommits / m);
      counts.roundTrips.push(productPart.roundTrips / m);
      counts.pgWaitMs.push(productPart.waitMs / m);
      stack.log(
        `  effects repeat ${r + 1}/${repeats}: step activity p50 ${pp.toFixed(1)} ms, twin's call activity ${tp.toFixed(1)} ms, two commits ${perRepeat.commits2.at(-1)!.toFixed(2)} ms (in the worker ${perRepeat.workerCommits2.at(-1)!.toFixed(2)} ms), the effect's statements ${perRepeat.effectStatements.at(-1)!.toFixed(2)} ms; ${counts.effectCommits.at(-1)!.toFixed(1)} effect-ledger commits per job`,
      );
    }
  } finally {
    await Promise.all([product.stop(), twin.stop()]);
    await stack.pool.query('DROP TABLE IF EXISTS bench_one_row');
  }
  const commitsSpread = spread(perRepeat.commits2);
  // The adapter's own cost, in the same run (scripts/bench/adapter-cost.ts).
  const adapter = await measureAdapterCost(stack);
  return [
    ...adapter,
    row({
      id: 'effects.added',
      section: 'effect recording',
      figure: `bookkeeping added per effect on the real summarize path (step activity p50 - twin's call activity p50, ${m} jobs one at a time per repeat)`,
      unit: 'ms',
      value: spread(perRepeat.added),
      baseline: { label: 'two one-row commits p50, same Postgres, same run', unit: 'ms', value: commitsSpread },
      sense: 'lower-better',
      paired: true,
      notes: `activity '${stepType}' ${spread(perRepeat.product).median.toFixed(1)} ms vs twin ${spread(perRepeat.twin).median.toFixed(1)} ms (history event times); the worker waited ${spread(counts.pgWaitMs).median.toFixed(2)} ms per job on Postgres (its statements timed at its client; the gate's question is asked in the attempt's first statement)`,
      details: {
        stepActivityMs: spread(perRepeat.product),
        twinCallActivityMs: spread(perRepeat.twin),
        workerPgWaitMs: spread(counts.pgWaitMs),
      },
    }),
    row({
      id: 'effects.statements',
      section: 'effect recording',
      figure: `time in the statements that wrote the effects table per summarize job (one effect), timed at the worker's client, p50 of ${m} jobs per repeat`,
      unit: 'ms',
      value: spread(perRepeat.effectStatements),
      baseline: { label: 'two one-row commits p50, same Postgres, same run', unit: 'ms', value: commitsSpread },
      sense: 'lower-better',
      paired: true,
      notes:
        "the effect's claim and the step's result statement, which carries the provider's IDs (`storeWithResult`): that statement's whole time, the result and outbox rows included; the row above adds the attempt's first statement (which also asks the degradation gate's question)",
    }),
    row({
      id: 'effects.statements-in-worker',
      section: 'effect recording',
      figure: `the same statements' time per summarize job (one effect), against two one-row commits timed inside the worker process, p50 of ${m} jobs per repeat`,
      unit: 'ms',
      value: spread(perRepeat.effectStatements),
      baseline: {
        label: 'two one-row commits p50, timed in the worker process on its own pool, between the jobs',
        unit: 'ms',
        value: spread(perRepeat.workerCommits2),
      },
      sense: 'lower-better',
      paired: true,
      notes: `the baseline shares the statements' client stack and event loop; timed in the bench process it was ${commitsSpread.median.toFixed(2)} ms`,
    }),
    row({
      id: 'effects.commits-per-effect',
      section: 'effect recording',
      figure: "commits that wrote the effects table, per summarize job (one effect each), counted at the worker's client",
      unit: 'commits',
      value: spread(counts.effectCommits),
      baseline: null,
      sense: 'info',
      notes: `every write commit of the worker per job: ${spread(counts.writeCommits).median.toFixed(1)}; round trips ${spread(counts.roundTrips).median.toFixed(1)}`,
      details: { writeCommits: spread(counts.writeCommits), roundTrips: spread(counts.roundTrips) },
    }),
  ];
}

/** The longest activity of a workflow's history (the one that made the upstream call), by the server's event times. */
async function callActivity(client: Client, id: string): Promise<{ type: string; ms: number }> {
  const h = await client.workflow.getHandle(id).fetchHistory();
  const scheduled = new Map<string, string>();
  const started = new Map<string, number>();
  let best = { type: '', ms: -1 };
  const ms = (t: unknown) => {
    const ts = t as { seconds?: { toNumber?: () => number } | number; nanos?: number };
    const sec = typeof ts.seconds === 'number' ? ts.seconds : (ts.seconds?.toNumber?.() ?? Number(ts.seconds));
    return sec * 1000 + (ts.nanos ?? 0) / 1e6;
  };
  for (const e of h.events ?? []) {
    const id = String(e.eventId);
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      scheduled.set(id, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
    else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
      started.set(String(e.activityTaskStartedEventAttributes?.scheduledEventId), ms(e.eventTime));
    else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const sid = String(e.activityTaskCompletedEventAttributes?.scheduledEventId);
      const d = ms(e.eventTime) - (started.get(sid) ?? Number.NaN);
      if (d > best.ms) best = { type: scheduled.get(sid) ?? '?', ms: d };
    }
  }
  if (best.ms < 0) throw new Error(`no completed activity in the history of ${id}`);
  return best;
}
