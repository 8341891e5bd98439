import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageQuery, type PageFilter } from '../../store/job-pages.js';
import { startHarness, TENANTS, type Harness } from '../support/harness.js';

// A list page on a 100k-row job_intents is answered from an index, never a sequential scan:
// the plan of the very statement the product runs (store/job-pages.ts `pageQuery`).
let h: Harness;
const ROWS = 100_000;
beforeAll(async () => {
  h = await startHarness('job-list-plan', { workers: 0 });
  await h.pool.query(
    `INSERT INTO tenants (id, api_key_hash) SELECT 'plan-t' || i, md5('plan-t' || i) FROM generate_series(1, 8) i
     UNION ALL SELECT 'plan-small', md5('plan-small')`,
  );
  // 100k jobs over 30 days of ten tenants and a small one (100 jobs), mostly finished, some
  // tagged, one in a hundred delayed.
  await h.pool.query(
    `INSERT INTO job_intents (job_id, tenant_id, job_type, input_hash, input, status, created_at, finished_at, run_at, tags)
     SELECT 'job-plan-' || i,
            CASE WHEN i % 1000 = 5 THEN 'plan-small' WHEN i % 10 = 0 THEN $2 WHEN i % 10 = 1 THEN $3 ELSE 'plan-t' || (i % 10 - 1) END,
            (ARRAY['summarize', 'purchase', 'transcribe'])[1 + i % 3],
            'h', '{}', st, c,
            CASE WHEN st IN ('succeeded', 'dead_lettered', 'cancelled') THEN c + interval '2 seconds' END,
            CASE WHEN i % 100 = 10 THEN now() + interval '1 day' END,
            CASE WHEN i % 50 = 0 THEN jsonb_build_object('order', 'ord-' || (i / 50)) END
       FROM generate_series(1, $1::int) i,
            LATERAL (SELECT CASE WHEN i % 100 = 10 THEN 'queued' WHEN i % 97 = 0 THEN 'running' WHEN i % 89 = 0 THEN 'dead_lettered'
                                 ELSE 'succeeded' END AS st,
                            now() - (($1::int - i) * 26) * interval '1 second' AS c) x`,
    [ROWS, TENANTS.a.id, TENANTS.b.id],
  );
  await h.pool.query('ANALYZE job_intents');
});
afterAll(async () => {
  await h?.close();
});

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

async function plan(f: PageFilter): Promise<PlanNode[]> {
  const q = pageQuery(f);
  const r = await h.pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
  return nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
}

describe('a page of a job list on 100k jobs', () => {
  it('is read from an index for every filter, first page or deep, for a tenant and across tenants', async () => {
    const count = (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n;
    expect(count).toBeGreaterThanOrEqual(ROWS);
    const deep = { createdUs: String((Date.now() - 10 * 86_400_000) * 1000), jobId: 'job-plan-50000' };
    const tenant = TENANTS.a.id;
    const cases: Array<[string, PageFilter]> = [
      ['tenant, first page', { tenantId: tenant, limit: 50 }],
      ['tenant, deep page', { tenantId: tenant, limit: 50, after: deep }],
      ['tenant, one state', { tenantId: tenant, states: ['succeeded'], limit: 50 }],
      ['tenant, scheduled', { tenantId: tenant, states: ['scheduled'], limit: 50 }],
      ['tenant, rare states', { tenantId: tenant, states: ['running', 'dead_lettered'], limit: 200, after: deep }],
      ['tenant, type', { tenantId: tenant, jobType: 'purchase', limit: 50 }],
      [
        'tenant, created range',
        {
          tenantId: tenant,
          createdAfter: new Date(Date.now() - 20 * 86_400_000),
          createdBefore: new Date(Date.now() - 19 * 86_400_000),
          limit: 50,
        },
      ],
      ['tenant, tag', { tenantId: tenant, tag: { key: 'order', value: 'ord-40' }, limit: 50 }],
      ['operators, first page', { limit: 50 }],
      ['operators, deep page, state', { states: ['dead_lettered'], limit: 50, after: deep }],
      ['operators, tenant and type', { tenantId: 'plan-t3', jobType: 'transcribe', limit: 200 }],
    ];
    for (const [name, f] of cases) {
      const p = await plan(f);
      const seq = p.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'job_intents');
      expect(seq, `${name}: ${JSON.stringify(p.map((n) => [n['Node Type'], n['Index Name']]))}`).toEqual([]);
      expect(
        p.some((n) => n['Index Name']?.startsWith('job_intents')),
        name,
      ).toBe(true);
    }
    // No plain page sorts a whole slice: a tenant's page reads the keyset index (or, for a tenant
    // with many recent jobs, the creation-time index, sorting only ties); a small tenant's reads its own slice.
    for (const [name, f] of cases.filter(([, c]) => !c.tag && !c.states && !c.jobType))
      expect(
        (await plan(f)).some((n) => n['Node Type'] === 'Sort'),
        name,
      ).toBe(false);
    const small = await plan({ tenantId: 'plan-small', limit: 50 });
    expect(small.find((n) => n['Index Name'])?.['Index Name'], JSON.stringify(small)).toBe('job_intents_tenant_page');
    expect(small.some((n) => n['Node Type'].endsWith('Sort'))).toBe(false);
  });

  it('answers the API from it: 50 jobs, the next page after the last, in milliseconds', async () => {
    const t0 = performance.now();
    const r = await h.api('/v1/jobs?limit=50');
    const ms = performance.now() - t0;
    expect(r.status).toBe(200);
    expect(r.body.jobs).toHaveLength(50);
    const next = await h.api(`/v1/jobs?limit=50&cursor=${r.body.nextCursor}`);
    expect(next.body.jobs).toHaveLength(50);
    expect(Date.parse(next.body.jobs[0].createdAt)).toBeLessThan(Date.parse(r.body.jobs[49].createdAt));
    // The delayed ones read as scheduled, and the filter finds them alone.
    const scheduled = await h.api('/v1/jobs?state=scheduled&limit=200');
    expect(scheduled.body.jobs.length).toBeGreaterThan(0);
    expect(scheduled.body.jobs.every((j: { status: string; scheduledFor?: string }) => j.status === 'scheduled' && j.scheduledFor)).toBe(
      true,
    );
    console.log(`[job-list-plan] first page of tenant a on ${ROWS} rows: ${ms.toFixed(1)} ms over HTTP`);
  });
});
