// Intake latency, one request at a time: `POST /v1/jobs` and the client library's `submitJob`
// against a bare `client.workflow.start`; a duplicate submit against a fresh one. The task
// queues have no worker, so no job runs beside the measurement and only the intake is timed.
import { TENANT, uid, type BenchStack } from './stack.js';
import { percentiles, pool, row, spread, timed, type BenchRow } from './stats.js';

type Series = 'bareStart' | 'submitFresh' | 'submitDuplicate' | 'httpFresh' | 'httpDuplicate';
const TEXT = { text: 'Intake latency benchmark: a short text to summarize.' };

export async function measureIntake(stack: BenchStack): Promise<BenchRow[]> {
  const m = stack.quick ? 15 : 200;
  const repeats = stack.quick ? 2 : 3;
  const queue = `bench-intake-noworker-${uid()}`;
  const bareQueue = `bench-intake-bare-noworker-${uid()}`;
  const app = await stack.startApp(queue);
  const started: string[] = [];
  const p50: Record<Series, number[]> = { bareStart: [], submitFresh: [], submitDuplicate: [], httpFresh: [], httpDuplicate: [] };
  const p99: Record<Series, number[]> = { bareStart: [], submitFresh: [], submitDuplicate: [], httpFresh: [], httpDuplicate: [] };
  try {
    const post = async (key: string): Promise<number> => {
      const res = await fetch(`${app.baseUrl}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TENANT.key}`, 'idempotency-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'summarize', input: TEXT }),
      });
      const body = (await res.json()) as { jobId?: string };
      if (res.status !== 202 && res.status !== 200) throw new Error(`POST /v1/jobs answered ${res.status}: ${JSON.stringify(body)}`);
      if (body.jobId && res.status === 202) started.push(body.jobId);
      return res.status;
    };
    const submit = async (key: string): Promise<boolean> => {
      const r = await app.jobs.submitJob({ tenantId: TENANT.id, type: 'summarize', idempotencyKey: key, input: TEXT });
      if (!r.replayed) started.push(r.jobId);
      return r.replayed;
    };
    const bareStart = async (): Promise<void> => {
      const id = `bench-intake-bare-${uid()}`;
      await stack.temporal.workflow.start('bareWorkflow', { taskQueue: bareQueue, workflowId: id, args: [0] });
      started.push(id);
    };
    // Warm-up: connections, prepared paths, JIT.
    for (let i = 0; i < 10; i++) {
      await bareStart();
      await submit(`warm-${uid()}`);
      await post(`warm-${uid()}`);
    }
    for (let r = 0; r < repeats; r++) {
      const series = async (name: Series, fn: (i: number) => Promise<unknown>): Promise<void> => {
        const lat: number[] = [];
        for (let i = 0; i < m; i++) lat.push((await timed(() => fn(i))).ms);
        const pc = percentiles(lat);
        p50[name].push(pc.p50);
        p99[name].push(pc.p99);
      };
      const submitKeys = Array.from({ length: m }, () => `bench-sub-${uid()}`);
      const httpKeys = Array.from({ length: m }, () => `bench-http-${uid()}`);
      await series('bareStart', () => bareStart());
      await series('submitFresh', async (i) => {
        if (await submit(submitKeys[i]!)) throw new Error('a fresh key was treated as a duplicate');
      });
      await series('submitDuplicate', async (i) => {
        if (!(await submit(submitKeys[i]!))) throw new Error('a duplicate submit started a new job');
      });
      await series('httpFresh', async (i) => {
        if ((await post(httpKeys[i]!)) !== 202) throw new Error('a fresh POST was not 202');
      });
      await series('httpDuplicate', async (i) => {
        if ((await post(httpKeys[i]!)) !== 200) throw new Error('a duplicate POST was not 200');
      });
      stack.log(
        `  intake repeat ${r + 1}/${repeats}: p50 bare ${p50.bareStart.at(-1)!.toFixed(1)} ms, submitJob ${p50.submitFresh.at(-1)!.toFixed(1)} ms, POST ${p50.httpFresh.at(-1)!.toFixed(1)} ms, duplicate POST ${p50.httpDuplicate.at(-1)!.toFixed(1)} ms`,
      );
    }
  } finally {
    await app.close();
    // Nobody polls these queues: on a server that outlives the bench, end what we started.
    if (!stack.embeddedTemporal) await terminateAll(stack, started);
  }
  const bare = (q: 'p50' | 'p99') => ({
    label: `bare client.workflow.start ${q}`,
    unit: 'ms',
    value: spread((q === 'p50' ? p50 : p99).bareStart),
  });
  const mk = (id: string, figure: string, s: Series, q: 'p50' | 'p99', baseline: BenchRow['baseline']): BenchRow =>
    row({
      id,
      section: 'intake',
      figure: `${figure} ${q} (${m} sequential calls per repeat)`,
      unit: 'ms',
      value: spread((q === 'p50' ? p50 : p99)[s]),
      baseline,
      sense: 'lower-better',
    });
  const fresh = (label: string, s: Series, q: 'p50' | 'p99') => ({
    label: `${label} ${q}`,
    unit: 'ms',
    value: spread((q === 'p50' ? p50 : p99)[s]),
  });
  return [
    mk('intake.http.p50', 'POST /v1/jobs (new intent)', 'httpFresh', 'p50', bare('p50')),
    mk('intake.http.p99', 'POST /v1/jobs (new intent)', 'httpFresh', 'p99', bare('p99')),
    mk('intake.submit.p50', 'submitJob (new intent)', 'submitFresh', 'p50', bare('p50')),
    mk('intake.submit.p99', 'submitJob (new intent)', 'submitFresh', 'p99', bare('p99')),
    mk(
      'intake.http-duplicate.p50',
      'POST /v1/jobs duplicate (200, replayed)',
      'httpDuplicate',
      'p50',
      fresh('fresh POST', 'httpFresh', 'p50'),
    ),
    mk(
      'intake.http-duplicate.p99',
      'POST /v1/jobs duplicate (200, replayed)',
      'httpDuplicate',
      'p99',
      fresh('fresh POST', 'httpFresh', 'p99'),
    ),
    mk('intake.submit-duplicate.p50', 'submitJob duplicate', 'submitDuplicate', 'p50', fresh('fresh submitJob', 'submitFresh', 'p50')),
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
