// Drill item 11: the production topology under crashes. Several API and worker processes on
// temporal-server (TEMPORAL_MODE=server), a mixed load, workers SIGKILLed and replaced while
// it runs, and the temporal-server process itself SIGKILLed once and restarted.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../lib/dev-server.js';
import type { DrillStack } from './stack.js';
import { DRILL_ADMIN_KEY, DRILL_TENANT, DRILL_WEBHOOK_SECRET } from './stack.js';
import { check, simEffects, simFault, simReset, uid, waitUntil, type DrillItem } from './support.js';

const API_ENTRY = fileURLToPath(new URL('../../server/main.ts', import.meta.url));
const JOBS = 500;
const API_PROCESSES = 2;
const WORKER_PROCESSES = 3;
const SUBMIT_CONCURRENCY = 12;
const TERMINAL = ['succeeded', 'dead_lettered', 'cancelled'];

interface ApiProcess {
  url: string;
  stop(): Promise<void>;
  output(): string;
}

/** `npm run api` as production runs it: its own process, env only, waiting for /readyz. */
async function spawnApi(s: DrillStack): Promise<ApiProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', API_ENTRY], {
    // The IPC channel makes the API exit if the drill dies (lib/shutdown.ts exitWithParent).
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: {
      ...process.env,
      DATABASE_URL: s.databaseUrl,
      TEMPORAL_ADDRESS: s.temporalAddress,
      TEMPORAL_NAMESPACE: s.temporal.options.namespace,
      TASK_QUEUE: s.taskQueue,
      HTTP_PORT: String(port),
      // Two APIs on one host: each its own admin listener (the default port is one per host).
      ADMIN_LISTEN_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      PROVIDER_URL: s.providerUrl,
      LOG_LEVEL: 'warn',
      WEBHOOK_SECRETS: `sim=${DRILL_WEBHOOK_SECRET}`,
      ADMIN_API_KEYS: `drill=${DRILL_ADMIN_KEY}`,
      SEED_TENANTS: '',
    },
  });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-50_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    `API process on ${url} to be ready`,
    async () => {
      if (child.exitCode !== null) throw new Error(`API exited: ${out.slice(-1000)}`);
      return (await fetch(`${url}/readyz`)).status === 200;
    },
    90_000,
  );
  return {
    url,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
    },
  };
}

function inputFor(i: number): { type: string; input: Record<string, unknown> } {
  switch (i % 4) {
    case 0:
      return { type: 'summarize', input: { text: `Topology job ${i}. It must run once.` } };
    case 1:
      return { type: 'summarize', input: { text: `Topology job ${i}, with a notification.`, notifyEmail: 'ops@example.com' } };
    case 2:
      return {
        type: 'purchase',
        input: { amountCents: 100 + i, currency: 'EUR', customer: `cus_${i}`, receiptEmail: 'drill@example.com' },
      };
    default:
      return { type: 'transcribe', input: { audioUrl: `https://audio.example.com/${i}.wav` } };
  }
}

/**
 * One intent, submitted the way a careful client does: the same Idempotency-Key again after a
 * 503 or a refused connection, until it is acknowledged (202, or 200 replayed).
 */
async function submitUntilAcknowledged(
  api: string,
  i: number,
  key: string,
): Promise<{ i: number; jobId: string; ms: number; tries: number }> {
  const { type, input } = inputFor(i);
  const deadline = Date.now() + 180_000;
  for (let tries = 1; ; tries++) {
    const t0 = performance.now();
    try {
      const r = await fetch(`${api}/v1/jobs`, {
        method: 'POST',
        body: JSON.stringify({ type, input }),
        headers: { authorization: `Bearer ${DRILL_TENANT.key}`, 'idempotency-key': key, 'content-type': 'application/json' },
      });
      const body = (await r.json().catch(() => ({}))) as { jobId?: string };
      if ((r.status === 202 || r.status === 200) && body.jobId) return { i, jobId: body.jobId, ms: performance.now() - t0, tries };
      if (r.status !== 503) throw new Error(`submit ${i} answered ${r.status}: ${JSON.stringify(body).slice(0, 200)}`);
    } catch (err) {
      if (!/fetch failed|ECONNREFUSED|ECONNRESET/i.test(String((err as Error).cause ?? err))) throw err;
    }
    if (Date.now() > deadline) throw new Error(`job ${i} not acknowledged within 180 s`);
    await new Promise((r) => setTimeout(r, 250 + Math.random() * 500));
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export const topology: DrillItem = {
  item: '11 production topology under crashes',
  about: '500 mixed jobs through 2 APIs and 3 workers on temporal-server while workers and the server are SIGKILLed (TEMPORAL_MODE=server)',
  needs: 'own-temporal-server',
  async run(s) {
    await simReset(s);
    // Upstream calls take a while, so that kills land on work in flight.
    await simFault(s, { path: '/v1/summaries', times: JOBS, status: 200, delayMs: 150 });
    const apis = await Promise.all(Array.from({ length: API_PROCESSES }, () => spawnApi(s)));
    try {
      while (s.workers.filter((w) => w.alive()).length < WORKER_PROCESSES) await s.spawnWorker();

      const run = uid();
      const acked: { i: number; jobId: string; ms: number; tries: number }[] = [];
      let next = 0;
      let workerKills = 0;
      let temporalDownMs = 0;
      let temporalCrashed = false;
      let intakeDone = false;
      const started = Date.now();

      // Chaos, in two independent loops: temporal-server is SIGKILLed once, when 40 % of the
      // load is acknowledged (so intake meets the outage); workers holding work are SIGKILLed
      // and replaced, over and over, while the load is submitted and drained.
      const temporalCrash = (async () => {
        while (acked.length < JOBS * 0.4 && !intakeDone) await new Promise((r) => setTimeout(r, 50));
        temporalCrashed = true;
        const t0 = Date.now();
        await s.crashTemporal(2_000);
        temporalDownMs = Date.now() - t0;
      })();
      const workerChaos = (async () => {
        while (!intakeDone || workerKills < 4) {
          await new Promise((r) => setTimeout(r, 2_000));
          const live = s.workers.filter((w) => w.alive());
          if (live.length === 0 || workerKills >= 8) {
            if (intakeDone) break;
            continue;
          }
          await live[Math.floor(Math.random() * live.length)]!.kill('SIGKILL');
          workerKills++;
          // A replacement started during the Temporal outage exits at once: try again shortly.
          while (s.workers.filter((w) => w.alive()).length < WORKER_PROCESSES) {
            await s.spawnWorker().catch(() => new Promise((r) => setTimeout(r, 1_000)));
          }
        }
      })();
      // The connection budget: peak Postgres connections of temporal-server and of everything.
      let peakTemporalConns = 0;
      let peakAllConns = 0;
      const sampler = setInterval(() => {
        s.pool
          .query<{ t: number; a: number }>(
            `SELECT count(*) FILTER (WHERE datname IN ('temporal', 'temporal_visibility'))::int AS t, count(*)::int AS a FROM pg_stat_activity WHERE backend_type = 'client backend'`,
          )
          .then(
            (r) => {
              peakTemporalConns = Math.max(peakTemporalConns, r.rows[0]!.t);
              peakAllConns = Math.max(peakAllConns, r.rows[0]!.a);
            },
            () => undefined,
          );
      }, 500);
      sampler.unref();
      const chaos = Promise.all([temporalCrash, workerChaos]);

      const submitter = async (): Promise<void> => {
        for (;;) {
          const i = next++;
          if (i >= JOBS) return;
          acked.push(await submitUntilAcknowledged(apis[i % apis.length]!.url, i, `topology-${run}-${i}`));
        }
      };
      await Promise.all(Array.from({ length: SUBMIT_CONCURRENCY }, submitter));
      intakeDone = true;
      const intakeEnd = Date.now();
      const ids = acked.map((a) => a.jobId);
      check(new Set(ids).size === JOBS, `${new Set(ids).size} distinct job IDs for ${JOBS} intents`);

      await waitUntil(
        'every acknowledged job to reach a terminal state',
        async () => {
          const r = await s.pool.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1) AND status = ANY($2)',
            [ids, TERMINAL],
          );
          return r.rows[0]!.n === JOBS;
        },
        600_000,
      );
      const drainedAt = Date.now();
      await chaos;
      clearInterval(sampler);

      // One terminal state each: one intent row, a terminal status, a closed workflow.
      const rows = (
        await s.pool.query<{ job_id: string; status: string; n: number }>(
          'SELECT job_id, status, count(*) OVER (PARTITION BY job_id)::int AS n FROM job_intents WHERE job_id = ANY($1)',
          [ids],
        )
      ).rows;
      const byStatus: Record<string, number> = {};
      for (const r of rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      check(
        rows.length === JOBS && rows.every((r) => r.n === 1 && TERMINAL.includes(r.status)),
        `intent rows: ${rows.length}, statuses ${JSON.stringify(byStatus)}`,
      );
      // A terminal intent row is not yet a closed workflow: a notification may still be going
      // out, or a worker killed after the step's commit leaves its activity (or workflow task) to
      // time out and run again elsewhere. Wait for every workflow to close, then check how.
      const statusesOf = async (jobIds: string[]) => {
        const out: { id: string; st: string }[] = [];
        for (let i = 0; i < jobIds.length; i += 25) {
          out.push(
            ...(await Promise.all(
              jobIds.slice(i, i + 25).map(async (id) => ({ id, st: (await s.temporal.workflow.getHandle(id).describe()).status.name })),
            )),
          );
        }
        return out;
      };
      // Each workflow is described once when the rows are terminal, then only those still open.
      const workflowStatus = new Map((await statusesOf(ids)).map((w) => [w.id, w.st]));
      let open = ids.filter((id) => workflowStatus.get(id) === 'RUNNING');
      const openAtDrain = open.length;
      const closingFrom = Date.now();
      const allClosed = await waitUntil(
        'every workflow to close',
        async () => {
          for (const w of await statusesOf(open)) workflowStatus.set(w.id, w.st);
          open = open.filter((id) => workflowStatus.get(id) === 'RUNNING');
          return open.length === 0;
        },
        180_000,
      ).catch(() => false);
      const closedAt = Date.now();
      if (!allClosed) {
        // Say where each one stands: its pending activities are the difference between slow and stuck.
        const where = await Promise.all(
          open.slice(0, 5).map(async (id) => {
            const pending = (await s.temporal.workflow.getHandle(id).describe()).raw.pendingActivities ?? [];
            const acts = pending.map(
              (a) => `${a.activityType?.name} attempt ${a.attempt}${a.lastFailure?.message ? ` (${a.lastFailure.message})` : ''}`,
            );
            return `${id}: ${acts.join('; ') || 'no pending activity'}`;
          }),
        );
        check(false, `${open.length} workflows still running 180 s after every intent was terminal: ${where.join(' | ')}`);
      }
      const notCompleted = ids.filter((id) => workflowStatus.get(id) !== 'COMPLETED').map((id) => `${id}=${workflowStatus.get(id)}`);
      check(notCompleted.length === 0, `${notCompleted.length} workflows not completed: ${notCompleted.slice(0, 5).join(', ')}`);

      const effects = (await simEffects(s)).byKey as Record<string, { applied: number }>;
      const twice = Object.entries(effects).filter(([k, e]) => ids.some((id) => k.startsWith(`${id}:`)) && e.applied > 1);
      check(
        twice.length === 0,
        `effect keys applied more than once: ${twice
          .slice(0, 5)
          .map(([k, e]) => `${k}×${e.applied}`)
          .join(', ')}`,
      );
      const firstStep = (i: number) => (i % 4 === 2 ? 'charge' : i % 4 === 3 ? 'transcribe' : 'summarize');
      const statusOf = new Map(rows.map((r) => [r.job_id, r.status]));
      const intentIndex = new Map(acked.map((a) => [a.jobId, a.i]));
      const missing = ids.filter(
        (id) => statusOf.get(id) === 'succeeded' && effects[`${id}:${firstStep(intentIndex.get(id)!)}`]?.applied !== 1,
      );
      check(missing.length === 0, `${missing.length} jobs without their first effect applied exactly once`);
      check(temporalCrashed, 'temporal-server was never crashed: the load finished before 40 %');

      const lat = acked.map((a) => a.ms).sort((a, b) => a - b);
      const retried = acked.filter((a) => a.tries > 1).length;
      const applied = Object.entries(effects).filter(([k]) => ids.some((id) => k.startsWith(`${id}:`))).length;
      return {
        done:
          `${JOBS} mixed jobs (summarize, summarize+notify, purchase, transcribe) through ${API_PROCESSES} API processes to ${WORKER_PROCESSES} worker processes; ` +
          `${workerKills} worker SIGKILLs (each replaced); temporal-server SIGKILLed once at 40 % and restarted (down ${(temporalDownMs / 1000).toFixed(1)} s)`,
        observed:
          `all ${JOBS} acknowledged jobs terminal (${Object.entries(byStatus)
            .map(([k, v]) => `${v} ${k}`)
            .join(', ')}), each one intent row and one completed workflow; ` +
          `${applied} effect keys, none applied twice; intake p50 ${pct(lat, 50).toFixed(0)} ms, p95 ${pct(lat, 95).toFixed(0)} ms, max ${lat[lat.length - 1]!.toFixed(0)} ms (${retried} intents re-sent after a 503 or refused connection); ` +
          `intake took ${((intakeEnd - started) / 1000).toFixed(1)} s, drained ${((drainedAt - intakeEnd) / 1000).toFixed(1)} s after the last acknowledgement (${((drainedAt - started) / 1000).toFixed(1)} s in all); ` +
          (openAtDrain === 0
            ? 'every workflow closed by the time every intent was terminal; '
            : `${openAtDrain} workflows still running once every intent was terminal (a notification going out, or a killed worker's task timing out), all closed ${((closedAt - closingFrom) / 1000).toFixed(1)} s later; `) +
          `peak Postgres connections: ${peakTemporalConns} of temporal-server, ${peakAllConns} in all`,
      };
    } finally {
      await Promise.all(apis.map((a) => a.stop()));
    }
  },
};
