import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { createPool, withTransaction } from '../../lib/db.js';
import { buildApp } from '../../server/app.js';
import { advanceTotals, readTotals } from '../../store/metric-totals.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { ADMIN_KEY, startHarness, waitFor, type Harness } from '../support/harness.js';
import { declaredFamilies, parseSamples, sampleValue, type Sample } from '../support/metrics-text.js';

// Cumulative figures and histograms derived from rows: the same values before and after the
// checkpoint moves, from any API process, never going down, and no row lost to a late commit.
let h: Harness;
beforeAll(async () => {
  // No scrape cache: each scrape reads the rows as they are, so no test waits out a cached one.
  h = await startHarness('health-totals', { workers: 1, metricsCacheMs: 0 });
});
afterAll(async () => {
  await h?.close();
});

const scrape = async () => {
  const r = await fetch(`${h.opsUrl}/metrics`);
  expect(r.status).toBe(200);
  return r.text();
};
const cumulative = (text: string): Sample[] =>
  parseSamples(text).filter(
    (s) =>
      /^durable_jobs_.*(_recorded|_bucket|_sum|_count)$/.test(s.name) &&
      !s.name.startsWith('durable_jobs_intake_rejections') &&
      !s.name.startsWith('durable_jobs_scan_'),
  );
const key = (s: Sample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
/** Moves the checkpoint to (just before the oldest open transaction of) now. */
const advanceNow = () => withTransaction(h.pool, (tx) => advanceTotals(tx, { minIntervalSeconds: 0, lagSeconds: 0 }));
const Q = 'durable_jobs_job_queue_time_seconds';
const E = 'durable_jobs_job_execution_time_seconds';

describe('cumulative metrics from durable rows', () => {
  it('declares every family, with zero series for each registered job type before any job', async () => {
    const text = await scrape();
    const families = declaredFamilies(text);
    for (const c of ['jobs_accepted', 'jobs_completed', 'attempts', 'reconciliations', 'dead_letters_created', 'lease_expirations']) {
      // Global figures read from Postgres: gauges without `_total` (issue 40 §4); `_total` is per process.
      expect(families.get(`durable_jobs_${c}_recorded`), c).toBe('gauge');
      expect(families.has(`durable_jobs_${c}_total`), c).toBe(false);
    }
    expect(families.get(Q)).toBe('histogram');
    expect(families.get(E)).toBe('histogram');
    const s = parseSamples(text);
    expect(sampleValue(s, 'durable_jobs_jobs_accepted_recorded', { job_type: 'summarize' })).toBe(0);
    expect(sampleValue(s, 'durable_jobs_jobs_completed_recorded', { job_type: 'summarize', outcome: 'succeeded' })).toBe(0);
    expect(sampleValue(s, 'durable_jobs_dead_letters_created_recorded', { job_type: 'summarize' })).toBe(0);
    expect(sampleValue(s, `${Q}_bucket`, { job_type: 'summarize', le: '+Inf' })).toBe(0);
  });

  it('names say how to aggregate: `_total` only on per-process counters (their HELP says so), every series prefixed', async () => {
    const text = await scrape();
    const families = declaredFamilies(text);
    const help = new Map([...text.matchAll(/^# HELP (\S+) (.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    const ours = [...families.keys()].filter((n) => !/^(process|nodejs)_/.test(n));
    expect(ours.filter((n) => !n.startsWith('durable_jobs_'))).toEqual([]);
    expect(ours).toContain('durable_jobs_webhook_deliveries_total');
    for (const n of ours) {
      // A counter is per process; a global figure read from Postgres is a gauge (or a histogram) without `_total`.
      expect(families.get(n) === 'counter', n).toBe(n.endsWith('_total'));
      if (n.endsWith('_total')) expect(help.get(n), n).toMatch(/this (API )?process/);
    }
  });

  it('counts jobs, outcomes, attempts and dead letters, with histograms of the finished jobs', async () => {
    await h.simFault({ path: '/v1/summaries', times: 2, status: 400 });
    const bad = [await h.submit('summarize', { text: 'bad 1' }), await h.submit('summarize', { text: 'bad 2' })];
    for (const r of bad) await h.waitForStatus(r.body.jobId, 'dead_lettered');
    const good = [];
    for (let i = 0; i < 3; i++) good.push(await h.submit('summarize', { text: `good ${i}` }));
    const finished = [];
    for (const r of good) finished.push(await h.waitForStatus(r.body.jobId, 'succeeded'));
    // A duplicate submission is the same job: not accepted twice.
    const dup = await h.submit('summarize', { text: 'good 0' }, { key: 'dup-key-1' });
    await h.submit('summarize', { text: 'good 0' }, { key: 'dup-key-1' });
    await h.waitForStatus(dup.body.jobId, 'succeeded');

    await readTotals(h.pool); // fails loudly, where a scrape would only leave the series out
    // The rows are durable before the answers; a scrape counts them at once (no scrape cache).
    const s = await waitFor('a scrape that counts the six jobs', async () => {
      const samples = parseSamples(await scrape());
      return sampleValue(samples, 'durable_jobs_jobs_accepted_recorded', { job_type: 'summarize' }) === 6 ? samples : undefined;
    });
    const v = (name: string, labels: Record<string, string> = {}) => sampleValue(s, name, { job_type: 'summarize', ...labels });
    expect(v('durable_jobs_jobs_accepted_recorded')).toBe(6);
    expect(v('durable_jobs_jobs_completed_recorded', { outcome: 'succeeded' })).toBe(4);
    expect(v('durable_jobs_jobs_completed_recorded', { outcome: 'dead_lettered' })).toBe(2);
    expect(v('durable_jobs_jobs_completed_recorded', { outcome: 'cancelled' })).toBe(0);
    expect(v('durable_jobs_dead_letters_created_recorded')).toBe(2);
    const attempts = s.filter((x) => x.name === 'durable_jobs_attempts_recorded' && x.labels.job_type === 'summarize');
    expect(attempts.filter((x) => x.labels.outcome === 'non_retryable').reduce((a, x) => a + x.value, 0)).toBe(2);
    expect(attempts.find((x) => x.labels.outcome === 'non_retryable')!.labels.error_class).not.toBe('none');
    expect(attempts.filter((x) => x.labels.outcome === 'succeeded').every((x) => x.labels.error_class === 'none')).toBe(true);

    // Histograms: every finished job that started once, in cumulative buckets, sums in seconds.
    for (const name of [Q, E]) {
      const buckets = s.filter((x) => x.name === `${name}_bucket` && x.labels.job_type === 'summarize');
      expect(buckets.at(-1)!.labels.le).toBe('+Inf');
      const counts = buckets.map((b) => b.value);
      expect(counts).toEqual([...counts].sort((a, b) => a - b));
      expect(counts.at(-1)).toBe(6);
      expect(v(`${name}_count`)).toBe(6);
    }
    const execSum = finished.reduce((a, j) => a + j.executionMs, 0) / 1000;
    expect(v(`${E}_sum`)).toBeGreaterThanOrEqual(execSum);
    expect(v(`${Q}_sum`)).toBeGreaterThanOrEqual(finished.reduce((a, j) => a + j.queuedMs, 0) / 1000 - 0.01);
  });

  it('reports the same values after the checkpoint folds the rows, and from a second API process', async () => {
    const before = cumulative(await scrape());
    expect(await advanceNow()).toBe(true);
    const { rows } = await h.pool.query<{ n: number; through: Date }>(
      'SELECT (SELECT count(*)::int FROM metric_totals) AS n, through FROM metric_checkpoint',
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
    expect(rows[0]!.through.getTime()).toBeGreaterThan(Date.now() - 60_000);
    const after = cumulative(await scrape());
    expect(new Map(after.map((x) => [key(x), x.value]))).toEqual(new Map(before.map((x) => [key(x), x.value])));

    const pool2 = createPool(h.databaseUrl, h.log);
    const app2 = buildApp({
      jobTypes: defaultJobRegistry,
      pool: pool2,
      temporal: h.temporal,
      jobs: createJobsClient({ jobs: defaultJobRegistry, pool: pool2, temporal: h.temporal, taskQueue: h.taskQueue }),
      log: h.log,
      adminApiKey: ADMIN_KEY,
      version: 'test',
      webhookSecrets: {},
    });
    try {
      const other = cumulative((await app2.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body);
      expect(new Map(other.map((x) => [key(x), x.value]))).toEqual(new Map(before.map((x) => [key(x), x.value])));
    } finally {
      await app2.close();
      await pool2.end();
    }

    // More jobs: every series is at least what it was (monotonic), the accepted count moved.
    const more = await h.submit('summarize', { text: 'after the checkpoint' });
    await h.waitForStatus(more.body.jobId, 'succeeded');
    const later = new Map(cumulative(await scrape()).map((x) => [key(x), x.value]));
    for (const x of after) expect(later.get(key(x)), key(x)).toBeGreaterThanOrEqual(x.value);
    expect(sampleValue(parseSamples(await scrape()), 'durable_jobs_jobs_accepted_recorded', { job_type: 'summarize' })).toBe(7);
  });

  it('does not lose a row whose transaction was open when the checkpoint moved', async () => {
    const client = await h.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ t: Date }>('SELECT now() AS t');
      // Stamped with this transaction's start (now()), committed after the checkpoint moved.
      await client.query(
        `INSERT INTO job_attempts (job_id, step, attempt, outcome, error_class, started_at) VALUES ('late-commit', 'x', 1, 'retryable', 'late_commit', now())`,
      );
      await new Promise((r) => setTimeout(r, 50));
      expect(await advanceNow()).toBe(true);
      const through = (await h.pool.query<{ through: Date }>('SELECT through FROM metric_checkpoint')).rows[0]!.through;
      expect(through.getTime()).toBeLessThan(rows[0]!.t.getTime());
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(
      sampleValue(parseSamples(await scrape()), 'durable_jobs_attempts_recorded', {
        job_type: 'other',
        outcome: 'retryable',
        error_class: 'late_commit',
      }),
    ).toBe(1);
    expect(await advanceNow()).toBe(true);
    expect(
      sampleValue(parseSamples(await scrape()), 'durable_jobs_attempts_recorded', {
        job_type: 'other',
        outcome: 'retryable',
        error_class: 'late_commit',
      }),
    ).toBe(1);
  });
});
