import type { DrillStack } from './stack.js';
import { evaluate, loadAlertRules, parseMetrics } from './alerts.js';
import { check, http, simFault, simReset, submit, uid, waitForStatus, waitUntil, type DrillItem } from './support.js';

const admin = (s: DrillStack, path: string, init: { method?: string; body?: unknown } = {}) => http(s, path, { ...init, admin: true });

async function alertStates(s: DrillStack, names: string[]): Promise<Record<string, { value: number; firing: boolean } | undefined>> {
  const rules = await loadAlertRules();
  const samples = parseMetrics(await (await fetch(`${s.api}/metrics`)).text());
  return Object.fromEntries(names.map((n) => [n, evaluate(rules.find((r) => r.alert === n)?.expr ?? '', samples)]));
}

export const metrics: DrillItem = {
  item: '8 health figures and alerts',
  async run(s) {
    await simReset(s);
    const before = await alertStates(s, ['DeadLetterGrowth', 'LeaseExpirationsSpike']);
    check(before.DeadLetterGrowth && before.LeaseExpirationsSpike, 'the alert expressions could not be evaluated against /metrics');
    check(
      !before.DeadLetterGrowth.firing && !before.LeaseExpirationsSpike.firing,
      `alerts already firing before the spike: ${JSON.stringify(before)}`,
    );

    // Spike 1: eleven permanent failures in a row.
    await simFault(s, { path: '/v1/summaries', times: 11, status: 400 });
    const bad = await Promise.all(Array.from({ length: 11 }, (_, i) => submit(s, 'summarize', { text: `Spike ${i}.` })));
    for (const r of bad) await waitForStatus(s, r.body.jobId, 'dead_lettered');
    // Spike 2: both workers die holding six attempts: six leases expire at once.
    await simFault(s, { path: '/v1/summaries', times: 6, status: 200, delayMs: 120_000 });
    const held = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(s, 'summarize', { text: `Held ${i}.` })));
    await waitUntil('six attempts in flight at the upstream', async () => {
      const e = (await (await fetch(`${s.providerUrl}/__sim/effects`)).json()) as { inFlight: number };
      return e.inFlight >= 6;
    });
    for (const w of s.workers.filter((x) => x.alive())) await w.kill('SIGKILL');
    await Promise.all([s.spawnWorker(), s.spawnWorker()]);
    for (const r of held) await waitForStatus(s, r.body.jobId, 'succeeded', 180_000);

    const health = (await admin(s, '/v1/admin/queue-health')).body;
    const after = await alertStates(s, ['DeadLetterGrowth', 'LeaseExpirationsSpike']);
    const text = await (await fetch(`${s.api}/metrics`)).text();
    const needed = [
      'durable_jobs_backlog_oldest_waiting_age_seconds',
      'durable_jobs_arrivals_per_minute',
      'durable_jobs_completions_per_minute',
      'durable_jobs_lease_expirations',
      'durable_jobs_attempts',
      'durable_jobs_reconciliations',
      'durable_jobs_dead_letters_open',
    ];
    const missing = needed.filter((m) => !new RegExp(`^${m}[{ ]`, 'm').test(text));
    check(missing.length === 0, `metrics missing from /metrics: ${missing.join(', ')}`);
    check(after.DeadLetterGrowth?.firing && after.LeaseExpirationsSpike?.firing, `after the spike: ${JSON.stringify(after)}`);
    check(health && typeof health === 'object', 'GET /v1/admin/queue-health did not answer');
    return {
      done: '11 permanent failures; 6 attempts held at the upstream, then both workers SIGKILLed; /metrics scraped and the alert rules evaluated',
      observed: `backlog age, arrival/completion rates, lease expirations, attempts, reconciliations, dead letters all exported; DeadLetterGrowth (${after.DeadLetterGrowth!.value} in 15 min) and LeaseExpirationsSpike (${after.LeaseExpirationsSpike!.value} in 5 min) fire, neither did before`,
    };
  },
};

export const degradation: DrillItem = {
  item: '9 degradation, recovery, replay controls',
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
