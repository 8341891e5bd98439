// Intake latency, one request at a time, every series interleaved per call (the order rotates
// from one call to the next, so no series always runs first or on a warmer connection):
//   bare:    client.workflow.start with no options (the engine's floor);
//   options: client.workflow.start with the options the product's intake really sent (search
//            attributes, summary, details, ID policies), captured from its last call;
//   noop:    a POST to a no-op route on the product's Fastify instance (the HTTP stack's cost);
//   floor:   a POST to a route on the same Fastify instance that commits one intent row and
//            calls workflow.start with those options (bench-only: registered here, never part of
//            the product's routes);
//   http:    POST /v1/jobs; submit: the client library's submitJob; and a duplicate of each.
// The task queues have no worker, so no job runs beside the measurement.
import { randomBytes } from 'node:crypto';
import { Client, type WorkflowStartOptions } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { TENANT, uid, type BenchStack } from './stack.js';
import { percentiles, pool, row, spread, timed, type BenchRow } from './stats.js';

const SERIES = ['bare', 'options', 'noop', 'floor', 'http', 'submit', 'httpDuplicate', 'submitDuplicate'] as const;
type Series = (typeof SERIES)[number];
const TEXT = { text: 'Intake latency benchmark: a short text to summarize.' };

export async function measureIntake(stack: BenchStack): Promise<BenchRow[]> {
  const m = stack.quick ? 15 : 200;
  const repeats = stack.quick ? 2 : 5;
  const queue = `bench-intake-noworker-${uid()}`;
  const bareQueue = `bench-intake-bare-noworker-${uid()}`;
  // A client of its own, whose workflow.start remembers what the product sent.
  const client = new Client({ connection: stack.temporal.connection, namespace: stack.namespace });
  let sent: { type: string; options: WorkflowStartOptions } | undefined;
  const start = client.workflow.start.bind(client.workflow);
  (client.workflow as { start: unknown }).start = (type: string, options: WorkflowStartOptions) => {
    sent = { type, options };
    return start(type, options);
  };
  const started: string[] = [];
  const withProductOptions = (id: string): [string, WorkflowStartOptions] => {
    if (!sent) throw new Error('the product has not started a workflow yet: no options to copy');
    const a0 = (sent.options.args?.[0] ?? {}) as Record<string, unknown>;
    return [sent.type, { ...sent.options, workflowId: id, args: [{ ...a0, jobId: id }] } as WorkflowStartOptions];
  };
  const setup = (app: FastifyInstance) => {
    app.post('/__bench/noop', async (_req, reply) => reply.code(202).send({ ok: true }));
    app.post('/__bench/floor', async (req, reply) => {
      const id = `bench-floor-${uid()}`;
      await stack.pool.query(
        `INSERT INTO job_intents (job_id, tenant_id, job_type, key_hash, input_hash, input) VALUES ($1, $2, 'summarize', $3, $4, $5)`,
        [
          id,
          TENANT.id,
          randomBytes(16).toString('hex'),
          randomBytes(16).toString('hex'),
          JSON.stringify((req.body as { input?: unknown })?.input ?? {}),
        ],
      );
      const [type, options] = withProductOptions(id);
      await start(type, options);
      started.push(id);
      return reply.code(202).send({ jobId: id, status: 'queued' });
    });
  };
  const app = await stack.startApp(queue, { temporal: client, setup });
  const lat: Record<Series, number[][]> = Object.fromEntries(SERIES.map((s) => [s, []])) as unknown as Record<Series, number[][]>;
  try {
    const post = async (url: string, key: string): Promise<number> => {
      const res = await fetch(`${app.baseUrl}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TENANT.key}`, 'idempotency-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'summarize', input: TEXT }),
      });
      const body = (await res.json()) as { jobId?: string };
      if (res.status !== 202 && res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${JSON.stringify(body)}`);
      if (body.jobId && res.status === 202 && url === '/v1/jobs') started.push(body.jobId);
      return res.status;
    };
    const submit = async (key: string): Promise<boolean> => {
      const r = await app.jobs.submitJob({ tenantId: TENANT.id, type: 'summarize', idempotencyKey: key, input: TEXT });
      if (!r.replayed) started.push(r.jobId);
      return r.replayed;
    };
    const call = async (s: Series, i: number, keys: { http: string[]; submit: string[] }): Promise<void> => {
      switch (s) {
        case 'bare': {
          const id = `bench-intake-bare-${uid()}`;
          await stack.temporal.workflow.start('bareWorkflow', { taskQueue: bareQueue, workflowId: id, args: [0] });
          started.push(id);
          return;
        }
        case 'options': {
          const id = `bench-intake-opt-${uid()}`;
          const [type, options] = withProductOptions(id);
          await start(type, options);
          started.push(id);
          return;
        }
        case 'noop':
          await post('/__bench/noop', 'noop');
          return;
        case 'floor':
          await post('/__bench/floor', 'floor');
          return;
        case 'http':
          if ((await post('/v1/jobs', keys.http[i]!)) !== 202) throw new Error('a fresh POST was not 202');
          return;
        case 'submit':
          if (await submit(keys.submit[i]!)) throw new Error('a fresh key was treated as a duplicate');
          return;
        case 'httpDuplicate':
          if ((await post('/v1/jobs', keys.http[i]!)) !== 200) throw new Error('a duplicate POST was not 200');
          return;
        case 'submitDuplicate':
          if (!(await submit(keys.submit[i]!))) throw new Error('a duplicate submit started a new job');
      }
    };
    // Warm-up: connections, prepared paths, JIT; and the product's options to copy.
    for (let i = 0; i < 10; i++) {
      const keys = { http: [`warm-${uid()}`], submit: [`warm-${uid()}`] };
      for (const s of ['http', 'submit', ...SERIES.filter((x) => x !== 'http' && x !== 'submit')] as Series[]) await call(s, 0, keys);
    }
    // Duplicates need their fresh call first: they keep their place after it in every rotation.
    const fresh: Series[] = ['bare', 'options', 'noop', 'floor', 'http', 'submit'];
    for (let r = 0; r < repeats; r++) {
      const keys = {
        http: Array.from({ length: m }, () => `bench-http-${uid()}`),
        submit: Array.from({ length: m }, () => `bench-sub-${uid()}`),
      };
      const one: Record<Series, number[]> = Object.fromEntries(SERIES.map((s) => [s, []])) as unknown as Record<Series, number[]>;
      for (let i = 0; i < m; i++) {
        const k = (i + r) % fresh.length;
        for (const s of [...fresh.slice(k), ...fresh.slice(0, k)]) one[s].push((await timed(() => call(s, i, keys))).ms);
        for (const s of ['httpDuplicate', 'submitDuplicate'] as const) one[s].push((await timed(() => call(s, i, keys))).ms);
      }
      for (const s of SERIES) lat[s].push(one[s]);
      const p = (s: Series) => percentiles(one[s]).p50.toFixed(1);
      stack.log(
        `  intake repeat ${r + 1}/${repeats}: p50 bare ${p('bare')} ms, start with product options ${p('options')}, noop route ${p('noop')}, floor route ${p('floor')}, POST ${p('http')}, submitJob ${p('submit')}, duplicate POST ${p('httpDuplicate')}`,
      );
    }
  } finally {
    await app.close();
    // Nobody polls these queues: on a server that outlives the bench, end what we started.
    if (!stack.embeddedTemporal) await terminateAll(stack, started);
  }
  const q = (s: Series, which: 'p50' | 'p99') => spread(lat[s].map((l) => percentiles(l)[which]));
  const base = (label: string, s: Series, which: 'p50' | 'p99') => ({ label: `${label} ${which}`, unit: 'ms', value: q(s, which) });
  const mk = (id: string, figure: string, s: Series, which: 'p50' | 'p99', baseline: BenchRow['baseline'], notes?: string): BenchRow =>
    row({
      id,
      section: 'intake',
      figure: `${figure} ${which} (${m} sequential calls per repeat, series interleaved per call)`,
      unit: 'ms',
      value: q(s, which),
      baseline,
      sense: 'lower-better',
      paired: true,
      ...(notes ? { notes } : {}),
    });
  const floorNote = (which: 'p50' | 'p99') =>
    `POST - floor ${spread(lat.http.map((l, i) => percentiles(l)[which] - percentiles(lat.floor[i]!)[which])).median.toFixed(2)} ms; floor = same Fastify instance, one intent row + workflow.start with the product's options`;
  return [
    mk('intake.http.p50', 'POST /v1/jobs (new intent)', 'http', 'p50', base('floor route', 'floor', 'p50'), floorNote('p50')),
    mk('intake.http.p99', 'POST /v1/jobs (new intent)', 'http', 'p99', base('floor route', 'floor', 'p99'), floorNote('p99')),
    mk(
      'intake.floor.p50',
      'floor route (one intent row + workflow.start)',
      'floor',
      'p50',
      base('bare client.workflow.start', 'bare', 'p50'),
    ),
    mk(
      'intake.options.p50',
      'workflow.start with the product options',
      'options',
      'p50',
      base('bare client.workflow.start', 'bare', 'p50'),
      'what the search attributes, summary and details cost the engine',
    ),
    mk('intake.noop.p50', 'no-op route on the same Fastify instance', 'noop', 'p50', null, 'the HTTP stack alone'),
    mk('intake.submit.p50', 'submitJob (new intent)', 'submit', 'p50', base('workflow.start with the product options', 'options', 'p50')),
    mk('intake.submit.p99', 'submitJob (new intent)', 'submit', 'p99', base('workflow.start with the product options', 'options', 'p99')),
    mk('intake.http-duplicate.p50', 'POST /v1/jobs duplicate (200, replayed)', 'httpDuplicate', 'p50', base('fresh POST', 'http', 'p50')),
    mk('intake.http-duplicate.p99', 'POST /v1/jobs duplicate (200, replayed)', 'httpDuplicate', 'p99', base('fresh POST', 'http', 'p99')),
    mk('intake.submit-duplicate.p50', 'submitJob duplicate', 'submitDuplicate', 'p50', base('fresh submitJob', 'submit', 'p50')),
  ];
}

async function terminateAll(stack: BenchStack, ids: string[]): Promise<void> {
  await pool(ids.length, 16, (i) =>
    stack.temporal.workflow
      .getHandle(ids[i]!)
      .terminate('benchmark intake measurement')
      .catch(() => undefined),
  );
}
