// A team's own job type, run as a team runs it: `invoice` from examples/acme-service (two
// effects, a task queue of its own, an upstream declared with `httpUpstream`), installed from
// this package's tarball into a scratch copy of the service, its worker started with the
// package's `durable-jobs worker --jobs src/jobs.ts`, its jobs submitted by the service's own
// code (`billOrder` through `durable-jobs/client`, 16 at once). Baseline: the bare workflow on
// the bench's bare worker, the sides alternating per repeat, as the throughput section does.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { upsertTenant } from '../../store/tenants.js';
import { workerProcessEnv } from '../../lib/worker-allocator.js';
import { cleanNpmEnv, prepareExampleScratch } from '../lib/example-scratch.js';
import { runBare, tenantJobsDone } from './throughput.js';
import { ACTIVITY_SLOTS, uid, type BenchStack } from './stack.js';
import { alternate, row, spread, waitUntil, type BenchRow } from './stats.js';

type Side = 'invoice' | 'bare';
const SIDES: Side[] = ['invoice', 'bare'];
const PAYMENTS_KEY = 'bench-payments-key-0123456789abcdef';

export async function measureExampleType(stack: BenchStack): Promise<BenchRow[]> {
  const n = stack.quick ? 10 : 200;
  const repeats = stack.quick ? 2 : 5;
  const scratch = prepareExampleScratch((m) => stack.log(`  ${m}`), 'ignore');
  const sharedQueue = `bench-acme-${uid()}`;
  const bareQueue = `bench-acme-bare-${uid()}`;
  let worker: ServiceWorker | undefined;
  const bare = await stack.startWorkerChild('bare', bareQueue);
  try {
    const env = {
      ...workerProcessEnv(cleanNpmEnv()),
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.namespace,
      TASK_QUEUE: sharedQueue,
      PROVIDER_URL: stack.sim.url,
      ACME_PAYMENTS_URL: stack.sim.url,
      ACME_PAYMENTS_KEY: PAYMENTS_KEY,
      // The registry's charge-order declares Stripe: its worker reads the key at start (never called here).
      STRIPE_SECRET_KEY: 'sk_test_bench0000',
      WORKER_ACTIVITY_SLOTS: String(ACTIVITY_SLOTS),
      CONCURRENCY_LIMITS: JSON.stringify({ invoice: { perTenant: 2_000, global: 2_000 } }),
      DURABLE_JOBS_SYSTEM: 'false',
      LOG_LEVEL: 'info',
    };
    worker = startServiceWorker(scratch.app, env);
    const w = worker;
    await waitUntil(
      'the service worker (durable-jobs worker --jobs src/jobs.ts) to poll',
      async () => {
        if (w.proc.exitCode !== null) throw new Error(`the service worker exited (${w.proc.exitCode}): ${w.tail()}`);
        return w.polling();
      },
      180_000,
      200,
    );
    const rates: Record<Side, number[]> = { invoice: [], bare: [] };
    let bareDone = 0;
    const once = async (side: Side, tag: string, count: number): Promise<number> => {
      if (side === 'bare') {
        const r = await runBare(stack, bareQueue, `acme-bare-${tag}-${uid()}`, count, bareDone);
        bareDone += count;
        return r.perSec;
      }
      const tenant = `bench-acme-${tag}-${uid()}`;
      await upsertTenant(stack.pool, tenant, `key-${tenant}-0123456789abcdef`);
      await submitFromService(scratch.app, env, tenant, count);
      return (await tenantJobsDone(stack, tenant, count, 'invoice', w.tail)).perSec;
    };
    for (const side of SIDES) await once(side, 'warm', Math.min(5, n));
    for (let r = 0; r < repeats; r++) {
      for (const side of alternate(SIDES, r)) rates[side].push(await once(side, String(r), n));
      stack.log(
        `  example repeat ${r + 1}/${repeats}: invoice ${rates.invoice.at(-1)!.toFixed(1)}/s, bare ${rates.bare.at(-1)!.toFixed(1)}/s`,
      );
    }
    return [
      row({
        id: 'example.invoice',
        section: 'example',
        figure: `acme-service's invoice jobs end to end (two effects, own task queue, from the packed tarball; N=${n}, 16 submitters, ${repeats} repeats)`,
        unit: 'jobs/s',
        value: spread(rates.invoice),
        baseline: { label: 'bare workflow + 1 no-op activity', unit: 'wf/s', value: spread(rates.bare) },
        sense: 'higher-better',
        paired: true,
        notes:
          "worker: `durable-jobs worker --jobs src/jobs.ts` in a scratch install; jobs submitted by the service's billOrder through durable-jobs/client; first intake to last succeeded (DB clock) vs first start to last close (visibility)",
      }),
    ];
  } finally {
    if (worker && worker.proc.exitCode === null) {
      const exited = new Promise((resolve) => worker!.proc.once('exit', resolve));
      worker.proc.kill('SIGTERM');
      await exited;
    }
    await bare.stop();
    scratch.remove();
  }
}

interface ServiceWorker {
  proc: ChildProcess;
  /** It logged `worker polling`. */
  polling(): boolean;
  /** The last 4 kB of its output, for errors. */
  tail(): string;
}

function startServiceWorker(app: string, env: NodeJS.ProcessEnv): ServiceWorker {
  const proc = spawn(path.join(app, 'node_modules', '.bin', 'durable-jobs'), ['worker', '--jobs', 'src/jobs.ts'], {
    cwd: app,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let seen = false;
  let tail = '';
  const keep = (b: Buffer) => {
    const s = b.toString();
    if (s.includes('worker polling')) seen = true;
    tail = (tail + s).slice(-4_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const killOnExit = () => proc.kill('SIGKILL');
  process.once('exit', killOnExit);
  proc.once('exit', () => process.off('exit', killOnExit));
  return { proc, polling: () => seen, tail: () => tail };
}

/** Runs the service's bench/submit.ts in its folder (its own tsx, the package's client). */
async function submitFromService(app: string, env: NodeJS.ProcessEnv, tenant: string, n: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/submit.ts'], {
    cwd: app,
    env: { ...env, BENCH_TENANT: tenant, BENCH_PREFIX: `${tenant}`, BENCH_N: String(n), BENCH_CONCURRENCY: '16' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`bench/submit.ts in the service exited ${code}: ${out.slice(-2_000)}`);
}
