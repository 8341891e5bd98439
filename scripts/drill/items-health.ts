import type { DrillStack } from './stack.js';
import { prometheusAvailable, startPrometheus, type PromAlert, type RunningPrometheus } from './alerts.js';
import {
  check,
  DrillCheckFailed,
  http,
  simFault,
  simRelease,
  simReset,
  submit,
  uid,
  waitForStatus,
  waitUntil,
  type DrillItem,
} from './support.js';

const admin = (s: DrillStack, path: string, init: { method?: string; body?: unknown } = {}) => http(s, path, { ...init, admin: true });

const WATCHED = ['RetryStorm', 'DeadLetterGrowth', 'LeaseExpirationsSpike', 'ReconciliationsSpike'] as const;
/** The drill's Prometheus shortens every longer `for:` to this: the shipped ones (5 min) are promtool's to test. */
const FOR_CAP_S = 20;
/** Retry storm: jobs within the tenant's summarize cap of 8 calls in flight (none waits for a slot), 5 refusals each. */
const STORM_JOBS = 8;
const STORM_429S = 40;
/**
 * Reconciliations: more than the rule's 10 effects in doubt at once. A tenant holds at most 8
 * summarize calls in flight (DEFAULT_CONCURRENCY), so two tenants hold 6 each.
 */
const HELD_PER_TENANT = 6;
const active = (alerts: PromAlert[], name: string) => alerts.filter((a) => a.labels.alertname === name);
const describe = (a: PromAlert | undefined) =>
  a ? `${a.state} (active since ${a.activeAt.slice(11, 19)}Z), value ${Number(a.value).toFixed(1)}` : 'inactive';

/** Waits for one alert to be firing in Prometheus, and says when it was pending and when it fired. */
async function firing(
  p: RunningPrometheus,
  name: string,
  timeoutMs: number,
): Promise<{ alert: PromAlert; pendingSeen: boolean; firedAt: number; activeForS: number }> {
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
  const firedAt = Date.now();
  const activeForS = (firedAt - Date.parse(alert.activeAt)) / 1000;
  // Pending for its whole (drill) for: first; the poll adds up to a second and a half.
  const loaded = p.forSeconds.get(name)?.loaded ?? 0;
  check(activeForS >= loaded - 2, `${name} fired ${activeForS.toFixed(0)} s after it became active: its for: here is ${loaded} s`);
  return { alert, pendingSeen, firedAt, activeForS };
}

/** Says what the rule's expression reads when an alert did not fire in time. */
const orExplain = (p: RunningPrometheus, expr: string) => async (e: Error) => {
  throw new DrillCheckFailed(`${e.message}; ${expr} is ${JSON.stringify(await p.query(expr).catch(() => 'unreadable'))}`);
};

/** How many of these jobs (of any tenant) are in this state, from Postgres. */
async function jobsIn(s: DrillStack, ids: string[], status: string): Promise<number> {
  const r = await s.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM job_intents WHERE job_id = ANY($1::text[]) AND status = $2`, [
    ids,
    status,
  ]);
  return r.rows[0]!.n;
}

/** Attempts of these jobs by outcome, from Postgres. */
async function attemptOutcomes(s: DrillStack, ids: string[]): Promise<Record<string, number>> {
  const r = await s.pool.query<{ outcome: string; n: number }>(
    `SELECT outcome, count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::text[]) GROUP BY outcome`,
    [ids],
  );
  return Object.fromEntries(r.rows.map((x) => [x.outcome, x.n]));
}

const forWords = (p: RunningPrometheus, name: string) => {
  const f = p.forSeconds.get(name);
  return f && f.loaded < f.shipped ? `for: ${f.loaded} s here, ${f.shipped / 60} min shipped` : `for: ${f?.loaded ?? 0} s`;
};

export const metrics: DrillItem = {
  item: '8 health figures and alerts',
  about:
    'a real Prometheus scrapes /metrics and the shipped alert rules (for: capped at 20 s) fire on a retry storm, failures, lost leases and reconciliations (needs prometheus)',
  async run(s) {
    check(
      prometheusAvailable(),
      'the prometheus binary is not installed (apt-get install -y prometheus): the shipped rules cannot be evaluated',
    );
    await simReset(s);
    // It scrapes the admin listener, as a Prometheus on the API's host would (F7).
    const prom = await startPrometheus(new URL(s.ops).host, { forCapSeconds: FOR_CAP_S });
    try {
      // One job refused once and then done: the attempt series RetryStorm reads (retryable and
      // succeeded summarize attempts) exist before the storm, so increase() counts all of it
      // (a series that appears mid-range starts at its first sample).
      await simFault(s, { path: '/v1/summaries', times: 1, status: 429, retryAfter: '0' });
      const primer = await submit(s, 'summarize', { text: 'Primes the attempt series.' });
      // Baseline: the API scraped, the rules loaded and evaluated without error, and a few
      // samples of each figure the watched rules read, so increase() has a start.
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
      await waitForStatus(s, primer.body.jobId, 'succeeded');
      const figures = [
        'durable_jobs_dead_letters_created_recorded',
        'durable_jobs_lease_expirations_recorded',
        'durable_jobs_reconciliations_recorded{job_type="summarize"}',
        'durable_jobs_attempts_recorded{job_type="summarize", outcome="retryable", error_class="rate_limited"}',
        'durable_jobs_attempts_recorded{job_type="summarize", outcome="succeeded"}',
      ];
      await waitUntil(
        'three samples of the figures',
        async () => (await prom.query(figures.map((f) => `min(count_over_time(${f}[1m])) >= 3`).join(' and on () '))).length === 1,
        60_000,
      );
      const before = await prom.alerts();
      for (const n of WATCHED) check(active(before, n).length === 0, `${n} already ${describe(active(before, n)[0])} before the faults`);

      // Fault 1, a retry storm: the upstream refuses 40 calls with 429 (Retry-After: 0, so each
      // retry comes at the floor); 8 jobs retry through them and succeed.
      await simFault(s, { path: '/v1/summaries', times: STORM_429S, status: 429, retryAfter: '0' });
      const storm = (await Promise.all(Array.from({ length: STORM_JOBS }, (_, i) => submit(s, 'summarize', { text: `Storm ${i}.` })))).map(
        (r) => r.body.jobId as string,
      );
      for (const id of storm) await waitForStatus(s, id, 'succeeded');
      const stormAttempts = await attemptOutcomes(s, storm);
      // Each 429 is one retryable attempt of these jobs (a straggler of an earlier item could take one).
      check(
        (stormAttempts.retryable ?? 0) > 20 && !stormAttempts.non_retryable,
        `the storm's jobs recorded ${JSON.stringify(stormAttempts)} attempts`,
      );

      // Fault 2: eleven permanent failures in a row (while RetryStorm is pending).
      await simFault(s, { path: '/v1/summaries', times: 11, status: 400 });
      const bad = await Promise.all(Array.from({ length: 11 }, (_, i) => submit(s, 'summarize', { text: `Spike ${i}.` })));
      for (const r of bad) await waitForStatus(s, r.body.jobId, 'dead_lettered');
      const dl = await firing(prom, 'DeadLetterGrowth', 60_000).catch(
        orExplain(prom, 'sum(max by (job_type) (increase(durable_jobs_dead_letters_created_recorded[15m])))'),
      );
      const retry = await firing(prom, 'RetryStorm', 90_000).catch(
        orExplain(
          prom,
          'sum by (job_type, outcome) (max by (job_type, outcome, error_class) (increase(durable_jobs_attempts_recorded[5m])))',
        ),
      );
      // A 429 says the call was not applied: nothing was in doubt, nothing reconciled.
      const afterStorm = await prom.alerts();
      for (const n of ['ReconciliationsSpike', 'LeaseExpirationsSpike'])
        check(active(afterStorm, n).length === 0, `${n} is ${describe(active(afterStorm, n)[0])} after 429s and 400s only`);

      // Fault 3: both workers die holding twelve calls the upstream has applied: twelve leases
      // expire, and twelve effects are in doubt until the next attempts reconcile them.
      const other = `drill-recon-${uid()}`;
      check((await admin(s, '/v1/admin/tenants', { body: { id: other } })).status === 201, `tenant ${other} not created`);
      const otherKey = (await admin(s, `/v1/admin/tenants/${other}/keys`, { body: { name: 'drill' } })).body?.key;
      check(typeof otherKey === 'string', `no key for tenant ${other}`);
      await simFault(s, { path: '/v1/summaries', times: 2 * HELD_PER_TENANT, status: 200, delayMs: 120_000 });
      const held = await Promise.all(
        Array.from({ length: 2 * HELD_PER_TENANT }, (_, i) =>
          i < HELD_PER_TENANT
            ? submit(s, 'summarize', { text: `Held ${i}.` })
            : http(s, '/v1/jobs', {
                body: { type: 'summarize', input: { text: `Held ${i}.` } },
                headers: { authorization: `Bearer ${otherKey}`, 'idempotency-key': `drill-${uid()}` },
              }),
        ),
      );
      for (const r of held) check(r.status === 202, `a held job's submit answered ${r.status}`);
      const heldIds = held.map((r) => r.body.jobId as string);
      await waitUntil(`${heldIds.length} calls in flight at the upstream`, async () => {
        const e = (await (await fetch(`${s.providerUrl}/__sim/effects`)).json()) as { inFlight: number };
        return e.inFlight >= heldIds.length;
      });
      for (const w of s.workers.filter((x) => x.alive())) await w.kill('SIGKILL');
      await Promise.all([s.spawnWorker(), s.spawnWorker()]);
      await waitUntil('the held jobs to succeed', async () => (await jobsIn(s, heldIds, 'succeeded')) === heldIds.length, 180_000);
      // The killed workers' calls are still held at the upstream, answering no one: end them.
      await simRelease(s, '/v1/summaries');
      const reconciled = (await attemptOutcomes(s, heldIds)).reconciled ?? 0;
      check(reconciled === heldIds.length, `${reconciled} of the ${heldIds.length} held jobs reconciled their effect`);
      const [lease, recon] = await Promise.all([
        firing(prom, 'LeaseExpirationsSpike', 120_000).catch(
          orExplain(prom, 'max by (job_type) (increase(durable_jobs_lease_expirations_recorded[5m]))'),
        ),
        firing(prom, 'ReconciliationsSpike', 120_000).catch(
          orExplain(prom, 'max by (job_type) (increase(durable_jobs_reconciliations_recorded[15m]))'),
        ),
      ]);

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
      const fired = (name: string, f: { alert: PromAlert; pendingSeen: boolean; activeForS: number }) =>
        `${name} ${f.pendingSeen ? 'pending, then ' : ''}${describe(f.alert)} (fired ${f.activeForS.toFixed(0)} s after it became active; ${forWords(prom, name)})`;
      return {
        done: `a real Prometheus (1 s scrape and rule evaluation, ${rules.length} shipped rules) scraped the drill API; ${STORM_429S} 429s across ${STORM_JOBS} jobs (${stormAttempts.retryable} retryable attempts); 11 permanent failures; ${heldIds.length} calls held at the upstream (2 tenants), then both workers SIGKILLed`,
        observed: `rules as shipped, \`for\` capped at ${FOR_CAP_S} s in the drill; the shipped \`for\` is covered by promtool tests; no alert active before the faults; ${fired('RetryStorm', retry)}, no reconciliation from the 429s; DeadLetterGrowth ${describe(dl.alert)}; ${fired('LeaseExpirationsSpike', lease)}; ${fired('ReconciliationsSpike', recon)} (${reconciled} effects reconciled); counters, histograms and gauges exported; ${scrapes[0]?.value[1] ?? '?'} scrapes, ${failed[0]?.value[1] ?? 0} failed, slowest ${Number(slowest[0]?.value[1] ?? NaN).toFixed(2)} s`,
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
