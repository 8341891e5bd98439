import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities/index.js';
import { createProvider } from '../../activities/provider.js';
import type { StepArgs } from '../../contract/job-types.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { jitterWindowMs, MIN_RETRY_DELAY_MS } from '../../lib/retry.js';
import type { StepOutcome, SummarizeActivities } from '../../jobs/summarize/activities.js';
import { attemptsForJob } from '../../store/attempts.js';
import type { DrillStack } from './stack.js';
import { DRILL_TENANT } from './stack.js';
import {
  check,
  DrillCheckFailed,
  simEffects,
  simFault,
  simReset,
  submit,
  uid,
  waitForStatus,
  waitUntil,
  type DrillItem,
} from './support.js';

const text = (n: number | string) => ({ text: `Drill job ${n}. It must run once.` });

/** The Temporal identity (`pid@host`) of the worker holding a job's running activity. */
async function holderPid(s: DrillStack, jobId: string): Promise<number> {
  return waitUntil(`an activity of ${jobId} to be held by a worker`, async () => {
    const d = await s.temporal.workflow.getHandle(jobId).describe();
    const identity = d.raw.pendingActivities?.[0]?.lastWorkerIdentity;
    const pid = identity ? Number(identity.split('@')[0]) : NaN;
    return Number.isInteger(pid) && s.workers.some((w) => w.pid === pid && w.alive()) ? pid : undefined;
  });
}

/** Where a job that never got its slot stands: the slot leases, its attempts' leases and Temporal's pending activity. */
async function slotEvidence(s: DrillStack, jobId: string): Promise<string> {
  const q = async (sql: string, params: unknown[]) =>
    JSON.stringify((await s.pool.query(sql, params).catch((e: Error) => ({ rows: [e.message] }))).rows);
  const leases = await q(
    `SELECT holder, round(extract(epoch FROM expires_at - now()))::int AS expires_in_s FROM concurrency_leases ORDER BY holder`,
    [],
  );
  const activity = await q(
    `SELECT attempt, activity_type, outcome, ended_at IS NOT NULL AS ended FROM activity_leases WHERE job_id = $1 ORDER BY attempt`,
    [jobId],
  );
  const attempts = await q(`SELECT attempt, step, outcome, error_class FROM job_attempts WHERE job_id = $1 ORDER BY id`, [jobId]);
  const pending = await s.temporal.workflow
    .getHandle(jobId)
    .describe()
    .then((d) =>
      JSON.stringify(
        (d.raw.pendingActivities ?? []).map((a) => ({
          id: a.activityId,
          state: a.state,
          attempt: a.attempt,
          worker: a.lastWorkerIdentity,
          lastFailure: a.lastFailure?.message,
        })),
      ),
    )
    .catch((e: Error) => e.message);
  // A worker process that died mid-item takes its attempts' slots with it: say so, with its last words.
  const dead = s.workers.filter((w) => !w.alive());
  const deaths = dead.map((w) => {
    const words = w
      .output()
      .split('\n')
      .filter((l) => !l.startsWith('{') && /error|code:/i.test(l))
      .slice(0, 4);
    return `worker ${w.pid} exited: ${words
      .map((l) => l.trim())
      .join(' | ')
      .slice(0, 400)}`;
  });
  return `${s.workers.length - dead.length}/${s.workers.length} workers alive${deaths.length ? ` (${deaths.join('; ')})` : ''}; concurrency_leases ${leases}; activity_leases ${activity}; job_attempts ${attempts}; pending activities ${pending}`;
}

export const intake: DrillItem = {
  item: '1 one intent, one job',
  about: '20 concurrent submits of one key make one job and one effect; the same key with another input is refused (422)',
  async run(s) {
    const key = `drill-intent-${uid()}`;
    const rs = await Promise.all(Array.from({ length: 20 }, () => submit(s, 'summarize', text('intent'), key)));
    const again = await submit(s, 'summarize', text('intent'), key);
    const changed = await submit(s, 'summarize', { text: 'another input' }, key);
    const ids = new Set([...rs, again].map((r) => r.body?.jobId));
    check(ids.size === 1, `${ids.size} different job IDs for one key`);
    const jobId = [...ids][0] as string;
    const accepted = rs.filter((r) => r.status === 202).length;
    check(accepted === 1 && again.status === 200, `${accepted} × 202 among 20 concurrent submits, then ${again.status}`);
    check(changed.status === 422, `a changed input with the same key answered ${changed.status}`);
    await waitForStatus(s, jobId, 'succeeded');
    const rows = (await s.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE job_id = $1', [jobId])).rows[0].n;
    const applied = (await simEffects(s)).byKey[`${jobId}:summarize`]?.applied;
    check(rows === 1 && applied === 1, `${rows} intent rows, effect applied ${applied} times`);
    return {
      done: '20 concurrent + 1 later submit of one key, then the same key with another input',
      observed: `one job (1 × 202, 20 × 200 replayed), 1 intent row, effect applied once; changed input → 422`,
    };
  },
};

export const competingWorkers: DrillItem = {
  item: '2 claim, lease, fencing',
  about: '2 worker processes share 20 jobs; the one holding a slow call is SIGKILLed; its late write is refused by the fence',
  async run(s) {
    await simReset(s);
    // Both workers take jobs; each job is held by exactly one attempt.
    await simFault(s, { path: '/v1/summaries', times: 20, status: 200, delayMs: 200 });
    const batch = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(s, 'summarize', text(`compete-${i}`))));
    for (const r of batch) await waitForStatus(s, r.body.jobId, 'succeeded');
    let single = 0;
    for (const r of batch) {
      const attempts = await attemptsForJob(s.pool, r.body.jobId);
      if (attempts.length === 1 && attempts[0]!.attempt === 1) single++;
    }
    const effects = await simEffects(s);
    const once = batch.filter((r) => effects.byKey[`${r.body.jobId}:summarize`]?.applied === 1).length;
    check(single === 20 && once === 20, `${single}/20 jobs ran as one attempt, ${once}/20 effects applied once`);

    // SIGKILL the worker holding a slow call (the upstream has not applied it yet).
    await simFault(s, { path: '/v1/summaries', times: 1, status: 503, delayMs: 120_000 });
    const victim = await submit(s, 'summarize', text('kill-mid-activity'));
    const pid = await holderPid(s, victim.body.jobId);
    const killedAt = Date.now();
    await s.workers.find((w) => w.pid === pid)!.kill('SIGKILL');
    const done = await waitForStatus(s, victim.body.jobId, 'succeeded');
    const takeover = Math.round((Date.now() - killedAt) / 100) / 10;
    check(done.attempts === 2, `the killed job took ${done.attempts} attempts`);
    await s.spawnWorker();

    // The killed attempt "comes back" late: its fenced write must be refused.
    const acts = createActivities({
      pool: s.pool,
      provider: createProvider(s.providerUrl),
      log: s.log,
      codeVersion: 'drill',
      jobs: defaultJobRegistry,
      limits: defaultJobRegistry.concurrencyLimits(),
    });
    const before = (await s.pool.query('SELECT result, result_fence FROM job_intents WHERE job_id = $1', [victim.body.jobId])).rows[0];
    const staleArgs: StepArgs = { jobId: victim.body.jobId, tenantId: DRILL_TENANT.id, jobType: 'summarize', priority: 'normal' };
    const stale: StepOutcome = await new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs: 10_000 }).run(
      acts.summarizeText as SummarizeActivities['summarizeText'],
      staleArgs,
    );
    const after = (await s.pool.query('SELECT result, result_fence FROM job_intents WHERE job_id = $1', [victim.body.jobId])).rows[0];
    check(!stale.resultStored && JSON.stringify(before) === JSON.stringify(after), 'the stale attempt overwrote the newer result');
    return {
      done: '20 jobs on 2 worker processes; SIGKILL of the worker holding a slow call; the killed attempt replayed late',
      observed: `20/20 jobs ran as one attempt, effects once; taken over after ${takeover} s (attempt 2); stale write refused (fence ${after.result_fence})`,
    };
  },
};

export const crashAfterEffect: DrillItem = {
  item: '3 crash between effect and record',
  about: 'a worker SIGKILLed after the upstream applied the effect recovers by reconciling the effect key, not calling again',
  async run(s) {
    await simReset(s);
    // The upstream applies the effect at once and holds the answer: the worker dies in the
    // window between "the upstream did it" and "we recorded it".
    await simFault(s, { path: '/v1/summaries', times: 1, status: 200, delayMs: 120_000 });
    const r = await submit(s, 'summarize', text('crash-after-effect'));
    const key = `${r.body.jobId}:summarize`;
    await waitUntil('the upstream to apply the effect', async () => (await simEffects(s)).byKey[key]?.applied === 1);
    const pid = await holderPid(s, r.body.jobId);
    await s.workers.find((w) => w.pid === pid)!.kill('SIGKILL');
    const done = await waitForStatus(s, r.body.jobId, 'succeeded');
    await s.spawnWorker();
    const entry = (await simEffects(s)).byKey[key];
    const effect = (await s.pool.query('SELECT reconciliations, provider_id FROM effects WHERE effect_key = $1', [key])).rows[0];
    check(
      entry.applied === 1 && effect.reconciliations === 1,
      `effect applied ${entry.applied} times, ${effect.reconciliations} reconciliations`,
    );
    check(done.result.providerId === effect.provider_id, 'the result does not carry the provider ID found on recovery');
    return {
      done: 'SIGKILL of the worker after the upstream applied the effect, before the result was stored',
      observed: `recovery reconciled by effect key (1 reconciliation, provider ID ${effect.provider_id}); upstream applied it once (${entry.requests} requests)`,
    };
  },
};

export const retries: DrillItem = {
  item: '4 classified retries',
  about: '429 honours Retry-After, 503 backs off with bounded jitter, 400/401/403 are not retried',
  async run(s) {
    await simReset(s);
    await simFault(s, { path: '/v1/summaries', times: 2, status: 429, retryAfter: '2' });
    const limited = await submit(s, 'summarize', text('429'));
    await waitForStatus(s, limited.body.jobId, 'succeeded');
    const times = (await simEffects(s)).byKey[`${limited.body.jobId}:summarize`].requestTimes.map((t: string) => Date.parse(t));
    const gaps = times.slice(1).map((t: number, i: number) => t - times[i]);
    check(gaps.length === 2 && gaps.every((g: number) => g >= 1_900), `gaps after 429 + Retry-After: 2 were ${gaps.join(', ')} ms`);

    await simFault(s, { path: '/v1/summaries', times: 3, status: 503 });
    const transient = await submit(s, 'summarize', text('503'));
    await waitForStatus(s, transient.body.jobId, 'succeeded');
    const budget = defaultJobRegistry.require('summarize').budget;
    const delays = (await attemptsForJob(s.pool, transient.body.jobId))
      .filter((a) => a.outcome === 'retryable')
      .map((a) => ({ n: a.attempt, d: a.delayMs ?? -1 }));
    // Full jitter over the product's own window (lib/retry.ts: at least 5 s wide, so jobs that
    // fail together do not retry in the same second), starting at the floor.
    const window = (n: number) => jitterWindowMs(n, { baseMs: budget.backoffBaseMs, capMs: budget.backoffCapMs });
    const bounded = delays.every(({ n, d }) => d >= MIN_RETRY_DELAY_MS && d <= window(n));
    check(delays.length === 3 && bounded, `503 backoff delays ${JSON.stringify(delays)}`);

    const permanent: string[] = [];
    for (const status of [400, 401, 403]) {
      await simFault(s, { path: '/v1/summaries', times: 1, status });
      const r = await submit(s, 'summarize', text(status));
      await waitForStatus(s, r.body.jobId, 'dead_lettered');
      const requests = (await simEffects(s)).byKey[`${r.body.jobId}:summarize`].requests;
      check(requests === 1, `${status} was sent ${requests} times`);
      permanent.push(`${status}→1 request`);
    }
    return {
      done: '429 + Retry-After: 2 twice; 503 three times; 400, 401 and 403 once each',
      observed: `429 gaps ${gaps.map((g: number) => `${(g / 1000).toFixed(1)} s`).join(', ')}; 503 jitter ${delays.map((x) => `${x.d} ms`).join(', ')} within bounds; ${permanent.join(', ')}, dead-lettered`,
    };
  },
};

export const restarts: DrillItem = {
  item: '10 Temporal and Postgres restart',
  about: '30 jobs in flight survive a Temporal restart and a Postgres restart (needs the Temporal and Postgres the drill starts)',
  needs: 'own-temporal-and-postgres',
  async run(s) {
    await simReset(s);
    await simFault(s, { path: '/v1/summaries', times: 30, status: 200, delayMs: 500 });
    const load = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(s, 'summarize', text(`restart-${i}`))));
    check(
      load.every((r) => r.status === 202),
      'not every job of the load was accepted',
    );
    await s.restartTemporal();
    await s.restartPostgres();
    // Intake keeps working after both restarts (the pool and the client reconnect).
    const after = await waitUntil('intake to accept again', async () => {
      const r = await submit(s, 'summarize', text('after-restarts'));
      return r.status === 202 ? r : undefined;
    });
    const ids = [...load, after].map((r) => r.body.jobId as string);
    for (const id of ids) {
      try {
        await waitForStatus(s, id, 'succeeded', 240_000);
      } catch (err) {
        throw new DrillCheckFailed(`${(err as Error).message}; ${await slotEvidence(s, id)}`);
      }
    }
    const effects = await simEffects(s);
    const twice = ids.filter((id) => effects.byKey[`${id}:summarize`]?.applied !== 1);
    check(twice.length === 0, `${twice.length} jobs applied their effect other than once`);
    return {
      done: `30 jobs in flight; ${s.temporalKind === 'server' ? 'temporal-server' : 'Temporal dev server (persistent)'} restarted, then Postgres restarted`,
      observed: `all ${ids.length} jobs succeeded, each effect applied exactly once; intake accepted again after the restarts`,
    };
  },
};
