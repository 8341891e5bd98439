/**
 * The queue-health sampler (services/health-sampler.ts, started by every API process): samples
 * are stored on a schedule, whether or not anyone reads the health page, the minute's point stays
 * fresh (a dead letter shows in the latest sample, not only from the next minute on), and
 * `history.samples` reads that stored series. A health read writes no sample of its own (review D11).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHealthSampler, type HealthSampler } from '../../services/health-sampler.js';
import { writeSample } from '../../store/health.js';
import { createServer } from '../../server/index.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { ADMIN_KEY, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
let sampler: HealthSampler | undefined;

beforeAll(async () => {
  h = await startHarness('health-sampler');
});
afterAll(async () => {
  await sampler?.stop();
  await h?.close();
});

const latest = async () =>
  (
    await h.pool.query<{ minute: Date; figures: Record<string, number | null> }>(
      'SELECT minute, figures FROM health_samples ORDER BY minute DESC LIMIT 1',
    )
  ).rows[0];
const count = async () => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM health_samples')).rows[0]!.n;
const health = (history: number) =>
  h.api(`/v1/admin/queue-health?history=${history}`, { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } });

describe('the queue-health sampler', () => {
  it('a health read stores no sample: only the sampler does', async () => {
    expect(await count()).toBe(0);
    const r = await health(5);
    expect(r.status).toBe(200);
    expect(
      Object.values(r.body.history.samples as Record<string, unknown[]>)
        .flat()
        .every((v) => v === null),
    ).toBe(true);
    expect(await count()).toBe(0);
  });

  it("a minute's sample is its latest write, not its first", async () => {
    // One transaction: now() and so the minute are the same for both writes.
    const c = await h.pool.connect();
    try {
      await c.query('BEGIN');
      expect(await writeSample(c, { deadLettersOpen: 0 })).toBe(true);
      expect(await writeSample(c, { deadLettersOpen: 1 })).toBe(false);
      const r = await c.query("SELECT figures FROM health_samples WHERE minute = date_trunc('minute', now())");
      expect(r.rows).toEqual([{ figures: { deadLettersOpen: 1 } }]);
    } finally {
      await c.query('ROLLBACK');
      c.release();
    }
  });

  it('samples on its own schedule, keeps the minute fresh, and the health history reads the stored series', async () => {
    sampler = startHealthSampler({ pool: h.pool, temporal: h.temporal, taskQueues: [h.taskQueue], log: h.log, intervalMs: 300 });
    // Nobody reads the health page here: the samples come from the timer alone.
    const first = await waitFor('a first sample', async () => (await latest()) ?? undefined, 60_000, 100);
    expect(first.figures).toMatchObject({ active: 0, deferred: 0, deadLettersOpen: 0, outboxPending: 0 });
    expect(first.minute.getUTCSeconds()).toBe(0);

    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const r = await h.submit('purchase', { amountCents: 990, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 's@example.com' });
    await h.waitForStatus(r.body.jobId, 'dead_lettered');
    // The latest point follows the figure (the first write of a minute no longer wins for the whole minute).
    await waitFor(
      'a sample with the dead letter',
      async () => ((await latest())?.figures.deadLettersOpen === 1 ? true : undefined),
      60_000,
      100,
    );

    const hist = (await health(5)).body;
    expect(hist.deadLetters.open).toBe(1);
    const series = hist.history.samples.deadLettersOpen as Array<number | null>;
    expect(series.filter((v) => v !== null).at(-1)).toBe(1);
    expect(hist.history.minutes).toHaveLength(series.length);

    // Stopping waits for a sample in flight, so the pool can end right after.
    await sampler.stop();
  });

  it('a server from createServer samples from ready to close, with nobody reading', async () => {
    await h.pool.query('DELETE FROM health_samples');
    const app = createServer({ jobs: defaultJobRegistry, pool: h.pool, temporal: h.temporal, taskQueue: h.taskQueue, log: h.log });
    try {
      await app.ready();
      await waitFor('a sample from the server', async () => ((await count()) > 0 ? true : undefined), 60_000, 100);
    } finally {
      await app.close();
    }
  });
});
