/**
 * A bulk cancel of 1,000 jobs by filter (issue 38 §3): it holds its rate and never cancels a job
 * outside the filter. Jobs of two tenants and two types, all delayed an hour (so they stay
 * cancellable; a cancel wakes the delayed run at once and the workflow records `cancelled`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorKey, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('bulk-cancel');
});
afterAll(async () => {
  await h?.close();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  h.api(path, { ...init, tenant: null, headers: { authorization: `Bearer ${operatorKey('dana')}` } });

/** Submits through the client (no HTTP per job), 20 at a time. */
async function submitDelayed(n: number, tenant: keyof typeof TENANTS, type: 'summarize' | 'purchase'): Promise<string[]> {
  const input =
    type === 'summarize'
      ? { text: 'A delayed job that a bulk action may cancel.' }
      : { amountCents: 500, currency: 'EUR', customer: 'cus_bulk', receiptEmail: 'bulk@example.com' };
  const ids: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const chunk = await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, () =>
        h.jobs.submitJob({ tenantId: TENANTS[tenant].id, type, idempotencyKey: `bulk-${uid()}`, input, delaySeconds: 3_600 }),
      ),
    );
    ids.push(...chunk.map((r) => r.jobId));
  }
  return ids;
}

const statusCounts = async (ids: string[]) => {
  const r = await h.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM job_intents WHERE job_id = ANY ($1) GROUP BY status',
    [ids],
  );
  return Object.fromEntries(r.rows.map((x) => [x.status, x.n]));
};

describe('bulk cancel by filter', () => {
  it('cancels exactly the 1,000 matching jobs at its rate, one audit row each under the operator, and nothing else', async () => {
    const inside = await submitDelayed(1_000, 'a', 'summarize');
    const otherTenant = await submitDelayed(30, 'b', 'summarize');
    const otherType = await submitDelayed(30, 'a', 'purchase');
    const filter = { tenantId: TENANTS.a.id, type: 'summarize', state: ['scheduled'] };

    // The preview: what, how many, per tenant and type; nothing changes.
    const preview = await admin('/v1/admin/bulk-actions', { body: { action: 'cancel', filter, limit: 1_000, dryRun: true } });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({
      dryRun: true,
      count: 1_000,
      limit: 1_000,
      groups: [{ tenantId: TENANTS.a.id, jobType: 'summarize', count: 1_000 }],
    });
    // More than the stated limit, or nothing at all: a 422 naming the field, and nothing starts.
    const over = await admin('/v1/admin/bulk-actions', { body: { action: 'cancel', filter, limit: 999 } });
    expect(over.status).toBe(422);
    expect(over.body.errors).toEqual([{ path: 'filter', message: expect.stringContaining('more than the limit of 999') }]);
    const none = await admin('/v1/admin/bulk-actions', { body: { action: 'cancel', filter: { ...filter, tenantId: 'tenant-nobody' } } });
    expect(none.status).toBe(422);
    expect(none.body.errors[0].path).toBe('filter');
    const badState = await admin('/v1/admin/bulk-actions', { body: { action: 'cancel', filter: { ...filter, state: ['succeeded'] } } });
    expect(badState.status).toBe(400);
    expect(badState.body.errors[0].path).toBe('filter.state');
    expect((await h.pool.query('SELECT count(*)::int AS n FROM bulk_actions')).rows[0].n).toBe(0);

    const ratePerMinute = 3_000; // 50 a second: burst 50
    const r = await admin('/v1/admin/bulk-actions', {
      body: { action: 'cancel', filter, limit: 1_000, ratePerMinute, concurrency: 4, batchSize: 50, reason: 'customer withdrew the batch' },
    });
    expect(r.status).toBe(202);
    const { bulkId } = r.body;
    expect(r.body).toMatchObject({ count: 1_000, bulkId: expect.stringMatching(/^bulk-/) });

    const done = await waitFor(
      `bulk ${bulkId} to complete`,
      async () => {
        const b = (await admin(`/v1/admin/bulk-actions/${bulkId}?items=0`)).body;
        return b.state === 'completed' ? b : undefined;
      },
      400_000,
      500,
    );
    expect(done).toMatchObject({ requestedBy: 'dana', counts: { total: 1_000, done: 1_000, applied: 1_000, skipped: 0, failed: 0 } });

    // One audit row per job, under the operator's name, exactly the filter's jobs.
    const items = (
      await h.pool.query<{ target_id: string; actor: string; outcome: string; granted_at: Date }>(
        'SELECT target_id, actor, outcome, granted_at FROM bulk_action_items WHERE bulk_id = $1',
        [bulkId],
      )
    ).rows;
    expect(items).toHaveLength(1_000);
    expect(new Set(items.map((i) => i.target_id))).toEqual(new Set(inside));
    expect(new Set(items.map((i) => `${i.actor}/${i.outcome}`))).toEqual(new Set(['dana/applied']));

    // The rate, as a property of the audit rows' times: in any window of t ms at most burst + t * rate / 60000 items.
    const burst = ratePerMinute / 60;
    const t = items.map((i) => i.granted_at.getTime()).sort((x, y) => x - y);
    for (let i = 0; i < t.length; i++) {
      for (let j = i; j < t.length; j++) expect(j - i + 1).toBeLessThanOrEqual(burst + ((t[j]! - t[i]!) * ratePerMinute) / 60_000 + 1e-9);
    }

    // Every matching job ends cancelled (the workflow records it) ...
    await waitFor('1,000 cancelled', async () => ((await statusCounts(inside)).cancelled === 1_000 ? true : undefined), 400_000, 1_000);
    // ... and none outside the filter was touched: a probe submitted now runs to success (the
    // worker has drained what the cancels woke), and every other job is still waiting for its time.
    const probe = await h.submit('summarize', { text: 'The worker keeps running jobs after the bulk cancel.' }, { tenant: 'b' });
    await h.waitForStatus(probe.body.jobId, 'succeeded', 'b');
    expect(await statusCounts([...otherTenant, ...otherType])).toEqual({ queued: 60 });
    const outside = (await h.api(`/v1/jobs/${otherType[0]}`)).body;
    expect(outside.status).toBe('scheduled');
  }, 900_000);
});
