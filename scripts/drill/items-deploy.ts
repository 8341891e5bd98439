// Drill item 14 (issue 40 §2): a rolling deploy under load. 200 jobs in flight on build A, build
// B (summarize's workflow body changed: a timer before its step) made current, A drained and
// stopped; then, with B's jobs in flight, A started again and the deploy rolled back to it. Every
// job must end once, on the build that started it, with no workflow task failed (a history of A
// replayed on B's code is non-deterministic: only pinning keeps it off B) and each effect once.
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { loadJobRegistry } from '../../job-api/load.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { deploymentStatus, DeploymentError, setCurrentWhenPolling } from '../../services/worker-deployments.js';
import { bundleWorkflows } from '../../workers/worker.js';
import { parseDeployArgs, runDeploy } from '../deploy-command.js';
import { pool } from '../lib/pool.js';
import { BUILD_B_TIMER_MS } from './deploy-build-b/workflow.js';
import { DRILL_TENANT, type DrillStack, type DrillWorker } from './stack.js';
import { check, DrillCheckFailed, simEffects, simFault, simRelease, simReset, uid, waitUntil, type DrillItem } from './support.js';

const BUILD_B_JOBS = fileURLToPath(new URL('./deploy-build-b/jobs.ts', import.meta.url));
const SUMMARIES = '/v1/summaries';
const IN_FLIGHT_ON_A = 200;
const AFTER_SWITCH = 50;
const IN_FLIGHT_ON_B = 20;
const AFTER_ROLLBACK = 20;
/** Held answers end when the item releases them; this only bounds a drill that died first. */
const HOLD_MS = 120_000;
const PINNED = proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
const ROUTING_IN_PROGRESS = proto.temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS;

interface Batch {
  name: string;
  build: string;
  worker: DrillWorker;
  ids: string[];
}

/** `n` summarize jobs through the item's own client (its own task queue), 20 submits at a time. */
async function submitMany(jobs: JobsClient, n: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = Array.from({ length: Math.min(20, n - i) }, (_, j) =>
      jobs.submitJob({
        tenantId: DRILL_TENANT.id,
        type: 'summarize',
        idempotencyKey: `drill-${uid()}`,
        input: { text: `${label} ${i + j}.` },
      }),
    );
    for (const r of await Promise.all(batch)) ids.push(r.jobId);
  }
  return ids;
}

async function succeeded(s: DrillStack, ids: string[]): Promise<number> {
  const r = await s.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1::text[]) AND status = 'succeeded'`,
    [ids],
  );
  return r.rows[0]!.n;
}

/** Every one of `ids` has reached the upstream and holds a rule's delay (the rules queued for them are all taken). */
async function allHeld(s: DrillStack, ids: string[]): Promise<boolean> {
  const effects = (await simEffects(s)).byKey as Record<string, { requests: number }>;
  const pending = (await (await fetch(`${s.providerUrl}/__sim/faults`)).json()) as { rules: unknown[] };
  return pending.rules.length === 0 && ids.every((id) => (effects[`${id}:summarize`]?.requests ?? 0) >= 1);
}

/**
 * Waits until Temporal says the deployment's last routing change reached every partition of its
 * task queues, so the jobs submitted next start on the new current build (a server that does not
 * report it, as 1.29 may not, is taken at its word at once).
 */
async function routed(s: DrillStack, deployment: string): Promise<void> {
  await waitUntil('the routing change to reach every task queue partition', async () => {
    const r = await s.temporal.workflowService.describeWorkerDeployment({
      namespace: s.temporal.options.namespace,
      deploymentName: deployment,
    });
    return r.workerDeploymentInfo?.routingConfigUpdateState !== ROUTING_IN_PROGRESS;
  });
}

/**
 * Waits until no open workflow of the queue is on `buildId`: visibility lists the running ones,
 * describe says where each is pinned. On a timeout it says how many were left and how many of
 * those had a workflow task failing again and again (a run that met code it cannot replay).
 */
async function drained(s: DrillStack, queue: string, buildId: string): Promise<void> {
  let [open, failing] = [0, 0];
  try {
    await waitUntil(`no open workflow left on build ${buildId}`, async () => {
      [open, failing] = [0, 0];
      for await (const w of s.temporal.workflow.list({ query: `TaskQueue = "${queue}" AND ExecutionStatus = "Running"` })) {
        const d = await s.temporal.workflow.getHandle(w.workflowId).describe();
        if (d.status.name !== 'RUNNING' || d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId !== buildId) continue;
        open++;
        if ((d.raw.pendingWorkflowTask?.attempt ?? 0) > 1) failing++;
      }
      return open === 0;
    });
  } catch (err) {
    throw new DrillCheckFailed(`${(err as Error).message} (last seen: ${open} open, ${failing} of them with a workflow task failing)`);
  }
}

/** What Temporal recorded of one job: where it is pinned, who ran its tasks, failed tasks, B's timer, its runs. */
async function runFacts(s: DrillStack, jobId: string) {
  const handle = s.temporal.workflow.getHandle(jobId);
  const [d, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
  const v = d.raw.workflowExecutionInfo?.versioningInfo;
  const identities = new Set<string>();
  let failedTasks = 0;
  let bTimer = false;
  let firstRun: string | null | undefined;
  for (const e of history.events ?? []) {
    const identity = e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
    if (identity) identities.add(identity);
    if (e.workflowTaskFailedEventAttributes) failedTasks++;
    const t = e.timerStartedEventAttributes?.startToFireTimeout;
    if (t && Number(t.seconds ?? 0) * 1000 + Math.round((t.nanos ?? 0) / 1e6) === BUILD_B_TIMER_MS) bTimer = true;
    const started = e.workflowExecutionStartedEventAttributes;
    if (started) firstRun = started.continuedExecutionRunId ? 'continued' : started.firstExecutionRunId;
  }
  const pinned = v?.behavior === PINNED ? v.deploymentVersion?.buildId : undefined;
  return { status: d.status.name, pinned, identities, failedTasks, bTimer, oneRun: firstRun === d.runId };
}

/**
 * One of A's histories replayed on B's code: what pinning spares A's jobs. The replay's SDK
 * runtime stays quiet (the failed task it logs is the point) and leaves the drill's signals alone.
 */
async function replayOnB(s: DrillStack, jobId: string): Promise<{ name: string; message: string }> {
  try {
    Runtime.install({
      shutdownSignals: [],
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'ERROR' }) } },
    });
  } catch {
    // Installed by an earlier replay of this process.
  }
  const history = await s.temporal.workflow.getHandle(jobId).fetchHistory();
  const workflowBundle = await bundleWorkflows(await loadJobRegistry(BUILD_B_JOBS));
  try {
    await Worker.runReplayHistory({ workflowBundle }, history, jobId);
    return { name: 'no error', message: '' };
  } catch (err) {
    return { name: (err as Error).name, message: (err as Error).message };
  }
}

/** Each job ended once, on its batch's build and worker, no task failed; B's ran the changed body. Returns failures, worded. */
async function checkBatches(s: DrillStack, batches: Batch[], buildB: string): Promise<string[]> {
  const problems: string[] = [];
  const effects = (await simEffects(s)).byKey as Record<string, { applied: number }>;
  for (const b of batches) {
    const identity = `${b.worker.pid}@${hostname()}`;
    const facts = await pool(b.ids.length, 16, (i) => runFacts(s, b.ids[i]!));
    const bad = (what: string, n: number) => {
      if (n > 0) problems.push(`${b.name}: ${n} of ${b.ids.length} ${what}`);
    };
    bad('not succeeded', b.ids.length - (await succeeded(s, b.ids)));
    bad('workflows not completed in one run', facts.filter((f) => f.status !== 'COMPLETED' || !f.oneRun).length);
    bad(`not pinned to ${b.build}`, facts.filter((f) => f.pinned !== b.build).length);
    bad(
      `with tasks taken by other workers than ${identity}`,
      facts.filter((f) => f.identities.size !== 1 || !f.identities.has(identity)).length,
    );
    bad('with a WorkflowTaskFailed event', facts.filter((f) => f.failedTasks > 0).length);
    const changed = b.build === buildB;
    bad(changed ? `without B's ${BUILD_B_TIMER_MS} ms timer` : `with B's timer`, facts.filter((f) => f.bTimer !== changed).length);
    bad('whose effect was not applied exactly once', b.ids.filter((id) => effects[`${id}:summarize`]?.applied !== 1).length);
  }
  const twice = Object.entries(effects).filter(([, e]) => e.applied > 1);
  if (twice.length) problems.push(`effects applied twice: ${twice.map(([k]) => k).join(', ')}`);
  return problems;
}

/**
 * `deploy rollback`, again only while Temporal refuses it (A's new workers not known to it yet:
 * nothing changed). Not `waitUntil`: it retries on any error, and a second rollback after one
 * that went through but failed on its way back would roll forward to B again.
 */
async function rollbackOnce(deploy: (...argv: string[]) => Promise<string>): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await deploy('rollback');
    } catch (err) {
      if (!(err instanceof DeploymentError && err.message.startsWith('Temporal refused')) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** What the item's phases share: its client, queue, deployment and builds, and how to start their workers. */
interface Rig {
  s: DrillStack;
  jobs: JobsClient;
  queue: string;
  deployment: string;
  A: string;
  B: string;
  deploy(...argv: string[]): Promise<string>;
  spawn(buildId: string, jobsModule?: string): Promise<DrillWorker>;
}

const secs = (from: number) => ((Date.now() - from) / 1000).toFixed(1);

/** 200 jobs held in flight on A, B made current, 50 new jobs, A's calls released, A drained and SIGTERMed. */
async function deployB(r: Rig, workerA: DrillWorker, workerB: DrillWorker): Promise<{ batches: Batch[]; notes: string }> {
  const { s, jobs, A, B } = r;
  await simFault(s, { path: SUMMARIES, times: IN_FLIGHT_ON_A, status: 200, delayMs: HOLD_MS });
  const tA = Date.now();
  const onA = await submitMany(jobs, IN_FLIGHT_ON_A, 'Deploy drill, build A');
  await waitUntil(`A's ${IN_FLIGHT_ON_A} calls to be held at the upstream`, () => allHeld(s, onA));
  const inFlightS = secs(tA);
  const finished = await succeeded(s, onA);
  check(finished < IN_FLIGHT_ON_A / 2, `${finished} of A's ${IN_FLIGHT_ON_A} had finished before B was made current`);

  const said = await r.deploy('set-current', B);
  check(said.includes(`was ${A}`), `deploy set-current answered: ${said}`);
  await routed(s, r.deployment);
  const afterSwitch = await submitMany(jobs, AFTER_SWITCH, 'Deploy drill, after the switch');
  const draining = (await deploymentStatus(s.temporal, r.deployment)).versions.find((v) => v.buildId === A)?.status;
  check(draining === 'draining', `build A is ${draining} after B was made current, not draining`);
  const tDrain = Date.now();
  const released = await simRelease(s, SUMMARIES);
  check(released === IN_FLIGHT_ON_A, `${released} held calls released, not A's ${IN_FLIGHT_ON_A}`);
  const all = [...onA, ...afterSwitch];
  await waitUntil('every job of A and of the switch to succeed', async () => (await succeeded(s, all)) === all.length);
  await drained(s, r.queue, A);
  const drainS = secs(tDrain);
  await workerA.kill('SIGTERM');
  return {
    batches: [
      { name: 'in flight on A', build: A, worker: workerA, ids: onA },
      { name: 'after the switch', build: B, worker: workerB, ids: afterSwitch },
    ],
    notes: `A's ${IN_FLIGHT_ON_A} started and held ${inFlightS} s after their first submit (${finished} finished) when B was made current; A drained ${drainS} s after release`,
  };
}

/** 20 jobs held in flight on B, A's workers started again, rollback, 20 new jobs on A while B's stay held; then B's released. */
async function rollBackToA(r: Rig, workerB: DrillWorker): Promise<{ batches: Batch[]; notes: string }> {
  const { s, jobs, A, B } = r;
  await simFault(s, { path: SUMMARIES, times: IN_FLIGHT_ON_B, status: 200, delayMs: HOLD_MS });
  const [workerA2, onB] = await Promise.all([r.spawn(A), submitMany(jobs, IN_FLIGHT_ON_B, 'Deploy drill, held on B')]);
  await waitUntil(`B's ${IN_FLIGHT_ON_B} calls to be held at the upstream`, () => allHeld(s, onB));
  const said = await rollbackOnce(r.deploy);
  check(said.includes(`${A} is current again`), `deploy rollback answered: ${said}`);
  await routed(s, r.deployment);
  const afterRollback = await submitMany(jobs, AFTER_ROLLBACK, 'Deploy drill, after the rollback');
  await waitUntil("the rollback's new jobs to succeed", async () => (await succeeded(s, afterRollback)) === AFTER_ROLLBACK);
  const bDone = await succeeded(s, onB);
  check(bDone === 0, `${bDone} of B's held jobs finished before their calls were released`);
  check((await simRelease(s, SUMMARIES)) === IN_FLIGHT_ON_B, `not B's ${IN_FLIGHT_ON_B} held calls released`);
  await waitUntil("B's held jobs to succeed", async () => (await succeeded(s, onB)) === IN_FLIGHT_ON_B);
  await drained(s, r.queue, B);
  return {
    batches: [
      { name: 'in flight on B', build: B, worker: workerB, ids: onB },
      { name: 'after the rollback', build: A, worker: workerA2, ids: afterRollback },
    ],
    notes: `after the rollback A's ${AFTER_ROLLBACK} finished while B's ${IN_FLIGHT_ON_B} were held, then those finished on B`,
  };
}

export const rollingDeploy: DrillItem = {
  item: '14 rolling deploy and rollback',
  about:
    '200 jobs in flight on build A, B (changed workflow body) made current, A drained; rollback to A: every job once, on its own build',
  async run(s) {
    await simReset(s);
    const id = uid();
    const queue = `drill-deploy-${id}`;
    const deployment = `drill-deploy-${id}`;
    const [A, B] = [`1.0.0+drill.a${id}`, `1.0.1+drill.b${id}`];
    // Held calls outlast the default upstream timeout (15 s): the item decides when they end.
    const jobs = createJobsClient({
      jobs: defaultJobRegistry,
      pool: s.pool,
      temporal: s.temporal,
      taskQueue: queue,
      budgets: { summarize: { upstreamTimeoutMs: HOLD_MS + 30_000 } },
    });
    const mine: DrillWorker[] = [];
    const r: Rig = {
      s,
      jobs,
      queue,
      deployment,
      A,
      B,
      deploy: (...argv) => runDeploy(parseDeployArgs([...argv, '--deployment', deployment], {}), s.temporal),
      async spawn(buildId, jobsModule) {
        const w = await s.spawnWorker({
          TASK_QUEUE: queue,
          DURABLE_JOBS_DEPLOYMENT: deployment,
          CODE_VERSION: buildId,
          // Every job's call at the upstream at once: under the default caps (8 per tenant) the
          // rest would wait for slots in workflow timers, and the item would last minutes.
          CONCURRENCY_LIMITS: JSON.stringify({ summarize: { perTenant: 300, global: 300 } }),
          CONCURRENCY_TOTAL: '300',
          WORKER_ACTIVITY_SLOTS: '300',
          ...(jobsModule ? { DURABLE_JOBS_JOBS: jobsModule } : {}),
        });
        mine.push(w);
        return w;
      },
    };
    const t0 = Date.now();
    try {
      // B's workers poll from the start, but get nothing until B is made current.
      const [workerA, workerB] = await Promise.all([r.spawn(A), r.spawn(B, BUILD_B_JOBS)]);
      await setCurrentWhenPolling(s.temporal, deployment, A);
      await routed(s, deployment);
      await waitUntil('build B to register', async () =>
        (await deploymentStatus(s.temporal, deployment)).versions.some((v) => v.buildId === B),
      );
      const forward = await deployB(r, workerA, workerB);
      const back = await rollBackToA(r, workerB);

      // Each job once, on its own build, as Temporal and the upstream recorded it.
      const batches = [...forward.batches, ...back.batches];
      const total = batches.reduce((n, b) => n + b.ids.length, 0);
      const runs = await waitUntil('visibility to list every run of the queue', async () => {
        const n = (await s.temporal.workflow.count(`TaskQueue = "${queue}"`)).count;
        return n >= total ? n : undefined;
      });
      check(runs === total, `${runs} workflow runs on the item's queue for ${total} jobs`);
      const problems = await checkBatches(s, batches, B);
      check(problems.length === 0, problems.join('; '));
      const replay = await replayOnB(s, forward.batches[0]!.ids[0]!);
      const nde = /Nondeterminism error: [^"\n]*/.exec(replay.message)?.[0] ?? replay.message.slice(0, 200);
      check(replay.name === 'DeterminismViolationError', `a history of A replayed on B's code: ${replay.name} ${nde}`);
      return {
        done: `${IN_FLIGHT_ON_A} jobs held in flight on A; B (a timer before the step) made current, ${AFTER_SWITCH} jobs; A drained and SIGTERMed; ${IN_FLIGHT_ON_B} held on B, A restarted, rollback, ${AFTER_ROLLBACK} jobs`,
        observed:
          `${forward.notes}; ${back.notes}; ` +
          `${total} jobs succeeded, one run each, pinned to and run by their own build's worker, no WorkflowTaskFailed, each effect applied once; ` +
          `B's ${AFTER_SWITCH + IN_FLIGHT_ON_B} histories hold its ${BUILD_B_TIMER_MS} ms timer, A's ${IN_FLIGHT_ON_A + AFTER_ROLLBACK} none; ` +
          `one of A's replayed on B's code: ${replay.name} (${nde}) (${secs(t0)} s)`,
      };
    } finally {
      await simRelease(s);
      await Promise.all(mine.map((w) => w.kill('SIGTERM')));
      await jobs.close();
    }
  },
};
