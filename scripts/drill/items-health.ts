import type { DrillStack } from './stack.js';
import { prometheusAvailable, startPrometheus, type PromAlert, type RunningPrometheus } from './alerts.js';
import { check, DrillCheckFailed, http, simFault, simReset, submit, uid, waitForStatus, waitUntil, type DrillItem } from './support.js';

const admin = (s: DrillStack, path: string, init: { method?: string; body?: unknown } = {}) => http(s, path, { ...init, admin: true });

const WATCHED = ['DeadLetterGrowth', 'LeaseExpirationsSpike'] as const;
const active = (alerts: PromAlert[], name: string) => alerts.filter((a) => a.labels.alertname === name);
const describe = (a: PromAlert | undefined) =>
  a ? `${a.state} since ${a.activeAt.slice(11, 19)}Z, value ${Number(a.value).toFixed(1)}` : 'inactive';

/** Waits for one alert to be firing in Prometheus, and says when it was pending and when it fired. */
async function firing(
  p: RunningPrometheus,
  name: string,
  timeoutMs: number,
): Promise<{ alert: PromAlert; pendingSeen: boolean; firedAt: number }> {
  let pendingSeen = false;
  const alert = await waitUntil(
    `Prometheus to fire ${name}`,
    async () => {
      const a = active(await p.alerts(), name);
      if (a.some((x) => x.state === 'pending')) pendingSeen = true;
      return a.find((x) => x.state === 'firing');
    },
    timeoutMs,
  );
  return { alert, pendingSeen, firedAt: Date.now() };
}

export const metrics: DrillItem = {
  item: '8 health figures and alerts',
  about: 'a real Prometheus scrapes /metrics and the shipped alert rules fire on failures and lost leases (needs prometheus)',
  async run(s) {
    check(
      prometheusAvailable(),
      'the prometheus binary is not installed (apt-get install -y prometheus): the shipped rules cannot be evaluated',
    );
    await simReset(s);
    // It scrapes the admin listener, as a Prometheus on the API's host would (F7).
    const prom = await startPrometheus(new URL(s.ops).host);
    try {
      // Baseline: the API scraped, the shipped rules loaded and evaluated without error, and
      // a few samples of each counter the watched rules read, so increase() has a start.
      await waitUntil(
        'Prometheus to scrape the API',
        async () => (await prom.query('up{job="durable-jobs-api"} == 1')).length === 1,
        60_000,
      );
      const groups = await waitUntil(
        'the shipped rules to be evaluated',
        async () => {
          const g = await prom.ruleGroups();
          return g.length > 0 && g.every((x) => x.lastEvaluation > '2000' && x.rules.every((r) => r.health === 'ok')) ? g : undefined;
        },
        60_000,
      );
      const rules = groups.flatMap((g) => g.rules);
      await waitUntil(
        'three samples of the counters',
        async () =>
          (
            await prom.query(
              'min(count_over_time(durable_jobs_dead_letters_created_recorded[1m])) >= 3 and on () min(count_over_time(durable_jobs_lease_expirations_recorded[1m])) >= 3',
            )
          ).length === 1,
        60_000,
      );
      const before = await prom.alerts();
      for (const n of WATCHED) check(active(before, n).length === 0, `${n} already ${describe(active(before, n)[0])} before the faults`);

      // Spike 1: eleven permanent failures in a row.
      await simFault(s, { path: '/v1/summaries', times: 11, status: 400 });
      const bad = await Promise.all(Array.from({ length: 11 }, (_, i) => submit(s, 'summarize', { text: `Spike ${i}.` })));
      for (const r of bad) await waitForStatus(s, r.body.jobId, 'dead_lettered');
      const dl = await firing(prom, 'DeadLetterGrowth', 60_000).catch(async (e: Error) => {
        throw new DrillCheckFailed(
          `${e.message}; its expression is ${JSON.stringify(await prom.query('sum(max by (job_type) (increase(durable_jobs_dead_letters_created_recorded[15m])))'))}`,
        );
      });

      // Spike 2: both workers die holding six attempts: six leases expire at once.
      check(active(await prom.alerts(), 'LeaseExpirationsSpike').length === 0, 'LeaseExpirationsSpike is active before any lease expired');
      await simFault(s, { path: '/v1/summaries', times: 6, status: 200, delayMs: 120_000 });
      const held = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(s, 'summarize', { text: `Held ${i}.` })));
      await waitUntil('six attempts in flight at the upstream', async () => {
        const e = (await (await fetch(`${s.providerUrl}/__sim/effects`)).json()) as { inFlight: number };
        return e.inFlight >= 6;
      });
      for (const w of s.workers.filter((x) => x.alive())) await w.kill('SIGKILL');
      await Promise.all([s.spawnWorker(), s.spawnWorker()]);
      for (const r of held) await waitForStatus(s, r.body.jobId, 'succeeded', 180_000);
      // for: 2m: pending first, firing two minutes after the sixth expiry was counted.
      const lease = await firing(prom, 'LeaseExpirationsSpike', 240_000);
      const activeFor = (lease.firedAt - Date.parse(lease.alert.activeAt)) / 1000;
      check(activeFor >= 118, `LeaseExpirationsSpike fired ${activeFor.toFixed(0)} s after it became active: its for: is 2m`);

      const scrapes = await prom.query('count_over_time(up{job="durable-jobs-api"}[1h])');
      const failed = await prom.query('count_over_time((up{job="durable-jobs-api"} == 0)[1h:1s])');
      const slowest = await prom.query('max_over_time(scrape_duration_seconds{job="durable-jobs-api"}[1h])');
      const health = (await admin(s, '/v1/admin/queue-health')).body;
      const text = await (await fetch(`${s.ops}/metrics`)).text();
      const needed = [
        'durable_jobs_backlog_oldest_waiting_age_seconds',
        'durable_jobs_net_drain_per_minute',
        'durable_jobs_attempts_recorded',
        'durable_jobs_reconciliations_recorded',
        'durable_jobs_dead_letters_open',
        'durable_jobs_jobs_accepted_recorded',
        'durable_jobs_jobs_completed_recorded',
        'durable_jobs_dead_letters_created_recorded',
        'durable_jobs_lease_expirations_recorded',
        'durable_jobs_job_queue_time_seconds_bucket',
        'durable_jobs_job_execution_time_seconds_bucket',
      ];
      const missing = needed.filter((m) => !new RegExp(`^${m}[{ ]`, 'm').test(text));
      check(missing.length === 0, `metrics missing from /metrics: ${missing.join(', ')}`);
      check(health && typeof health === 'object', 'GET /v1/admin/queue-health did not answer');
      return {
        done: `a real Prometheus (1 s scrape and rule evaluation, ${rules.length} shipped rules) scraped the drill API; 11 permanent failures; 6 attempts held at the upstream, then both workers SIGKILLed`,
        observed: `neither alert active before the faults; DeadLetterGrowth ${describe(dl.alert)}; LeaseExpirationsSpike ${lease.pendingSeen ? 'pending, then ' : ''}${describe(lease.alert)} (fired ${activeFor.toFixed(0)} s after it became active, for: 2m); counters, histograms and gauges exported; ${scrapes[0]?.value[1] ?? '?'} scrapes, ${failed[0]?.value[1] ?? 0} failed, slowest ${Number(slowest[0]?.value[1] ?? NaN).toFixed(2)} s`,
      };
    } catch (err) {
      const tail = prom.output().trim().split('\n').slice(-5).join(' | ');
      if (tail) (err as Error).message += ` (prometheus: ${tail})`;
      throw err;
    } finally {
      await prom.stop();
    }
  },
};

export const degradation: DrillItem = {
  item: '9 degradation, recovery, replay controls',
  about: 'paused low priority is deferred and audited, resumes at the ramp rate; a failing replay halts at maxFailures',
  async run(s) {
    await simReset(s);
    const paused = await admin(s, '/v1/admin/degradation', {
      method: 'PUT',
      body: { pausedPriorities: ['low'], recoveryRatePerMinute: 60, reason: 'drill: provider brown-out' },
    });
    check(paused.status === 200, `pausing low priority answered ${paused.status}`);
    const low = await submit(s, 'summarize', { text: 'Low priority during the drill.' }, `drill-low-${uid()}`, { priority: 'low' });
    const normal = await submit(s, 'summarize', { text: 'Normal priority during the drill.' });
    check(low.status === 202, `a low-priority job during the pause answered ${low.status}`);
    const deferred = await waitForStatus(s, low.body.jobId, 'deferred');
    await waitForStatus(s, normal.body.jobId, 'succeeded');
    check(deferred.statusReason && deferred.deferredSince, `deferred status without reason or time: ${JSON.stringify(deferred)}`);
    const resumed = await admin(s, '/v1/admin/degradation', { method: 'PUT', body: { pausedPriorities: [], recoveryRatePerMinute: 60 } });
    check(resumed.status === 200, `resuming answered ${resumed.status}`);
    const ran = await waitForStatus(s, low.body.jobId, 'succeeded');
    const audit = (await admin(s, '/v1/admin/degradation')).body.audit as Array<{ actor: string }>;
    check(audit.filter((a) => a.actor === 'drill').length >= 2, 'the degradation changes were not audited with who');

    // A replay with a stop condition: every replay fails again, so it halts after the limit.
    await simFault(s, { path: '/v1/summaries', times: 3, status: 400 });
    const doomed = await Promise.all(Array.from({ length: 3 }, (_, i) => submit(s, 'summarize', { text: `Doomed ${i}.` })));
    const dlIds: string[] = [];
    for (const r of doomed) dlIds.push((await waitForStatus(s, r.body.jobId, 'dead_lettered')).deadLetterId);
    await simFault(s, { path: '/v1/summaries', times: 3, status: 400 });
    const replay = await admin(s, '/v1/dead-letters/replay', { body: { ids: dlIds, concurrency: 1, ratePerMinute: 30, maxFailures: 0 } });
    check(replay.status === 202, `replay answered ${replay.status}`);
    const progress = await waitUntil('the replay to halt', async () => {
      const p = (await admin(s, `/v1/dead-letters/replays/${replay.body.replayId}`)).body;
      return ['halted', 'stopped', 'completed'].includes(p?.state) ? p : undefined;
    });
    const actions = (await admin(s, `/v1/dead-letters/${dlIds[0]}`)).body;
    check(progress.state === 'halted', `a replay whose every item fails ended ${progress.state}`);
    check(JSON.stringify(actions).includes('drill'), 'the dead letter actions do not name the operator');
    return {
      done: 'paused low priority (audited), submitted low + normal, resumed at 60/min; replayed 3 failing dead letters with maxFailures 0 at 30/min',
      observed: `low → 202 deferred ("${String(deferred.statusReason).slice(0, 60)}…"), normal ran; after resume low ran (admitted ${ran.deferredMs} ms after deferral); audit names the operator; replay halted by its stop condition (${progress.state})`,
    };
  },
};
