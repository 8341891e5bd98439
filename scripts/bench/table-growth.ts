// How intake, the claim path and a metrics scrape change as the tables grow (they must stay
// flat). Each size gets a FRESH database of its own (so no size runs on a cache the other
// warmed), filled with synthetic finished jobs (generate_series) in job_intents, effects and
// job_attempts; the sizes are measured alternately in every repeat. At each size, on the real
// path: submitJob p50 (timed here); the claim path as the worker's own Postgres time per job
// (a worker child on that database runs the jobs; its pg.Client#query is wrapped, so whatever
// statements the product sends are timed, whatever their names); one GET /metrics scrape p50.
// At the largest size, every statement the worker, the intake, a /metrics scrape and
// GET /v1/admin/queue-health sent is EXPLAINed, and sequential scans of the big tables flagged.
import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { createPool } from '../../lib/db.js';
import type { Child } from './child.js';
import { captureStatements, diffPg, type PgCounters } from './pg-probe.js';
import { ADMIN_KEY, TENANT, uid, type BenchStack } from './stack.js';
import { alternate, percentiles, row, spread, timed, waitUntil, type BenchRow } from './stats.js';

const BIG_TABLES = ['job_intents', 'effects', 'job_attempts'];

interface Db {
  size: number;
  pool: pg.Pool;
  child: Child;
  app: { baseUrl: string; jobs: ReturnType<BenchStack['jobsClient']>; close(): Promise<void> };
  submit: number[];
  claim: number[];
  scrape: number[];
  roundTrips: number[];
}

export async function measureTableGrowth(stack: BenchStack): Promise<BenchRow[]> {
  const sizes = stack.quick ? [100, 1_000] : [1_000, 100_000];
  const m = stack.quick ? 8 : 50;
  const scrapes = stack.quick ? 2 : 15;
  const repeats = stack.quick ? 2 : 5;
  const dbs: Db[] = [];
  let plans: Record<string, string> = {};
  try {
    for (const size of sizes) {
      const url = await stack.createDatabase(`growth_${size}`);
      const p = createPool(url, stack.silentLogger, 4);
      const t = await timed(() => bulkInsert(p, 0, size));
      const queue = `bench-growth-${size}-${uid()}`;
      const child = await stack.startWorkerChild('product', queue, { databaseUrl: url });
      const app = await stack.startApp(queue, { pool: p });
      dbs.push({ size, pool: p, child, app, submit: [], claim: [], scrape: [], roundTrips: [] });
      stack.log(
        `  table growth: fresh database with ${size.toLocaleString('en')} rows per table (filled in ${(t.ms / 1000).toFixed(1)} s)`,
      );
    }
    for (const d of dbs) await runJobs(d, 3, `warm-${uid()}`); // warm-up: isolates, connections
    for (let r = 0; r < repeats; r++) {
      for (const d of alternate(dbs, r)) {
        const j = await runJobs(d, m, `r${r}-${uid()}`);
        d.submit.push(j.submitP50);
        d.claim.push(j.worker.waitMs / m);
        d.roundTrips.push(j.worker.roundTrips / m);
      }
      // Scrapes after both sizes ran their jobs, the sizes alternating per scrape, so a busy
      // moment of the machine falls on both sides alike (one size's scrapes right after its own
      // jobs made the ratio swing 0.9-2.4x).
      const sc = new Map<Db, number[]>(dbs.map((d) => [d, []]));
      for (let i = 0; i < scrapes; i++) for (const d of alternate(dbs, i + r)) sc.get(d)!.push((await timed(() => scrape(d))).ms);
      for (const d of dbs) d.scrape.push(percentiles(sc.get(d)!).p50);
      stack.log(
        `  table growth repeat ${r + 1}/${repeats}: ${dbs.map((d) => `${d.size}: submit ${d.submit.at(-1)!.toFixed(1)} ms, worker Postgres ${d.claim.at(-1)!.toFixed(1)} ms/job, scrape ${d.scrape.at(-1)!.toFixed(0)} ms`).join('; ')}`,
      );
    }
    plans = await explainAll(stack, dbs.at(-1)!);
  } finally {
    for (const d of dbs) {
      await d.app.close().catch(() => undefined);
      await d.child.stop().catch(() => undefined);
      await d.pool.end().catch(() => undefined);
    }
  }
  const base = dbs[0]!;
  const rows: BenchRow[] = [];
  for (const d of dbs.slice(1)) {
    const mk = (id: string, figure: string, k: 'submit' | 'claim' | 'scrape', notes?: string) =>
      row({
        id: `growth.${id}.${d.size}`,
        section: 'table growth',
        figure: `${figure} with ${d.size.toLocaleString('en')} rows per table (fresh database)`,
        unit: 'ms',
        value: spread(d[k]),
        baseline: { label: `same with ${base.size.toLocaleString('en')} rows, its own fresh database`, unit: 'ms', value: spread(base[k]) },
        sense: 'lower-better',
        paired: true,
        ...(notes ? { notes } : {}),
      });
    rows.push(
      mk('submit', 'submitJob p50', 'submit'),
      mk(
        'claim',
        "claim path: the worker's Postgres time per summarize job (every statement it sent, timed at its client)",
        'claim',
        `${spread(d.roundTrips).median.toFixed(1)} round trips per job (${spread(base.roundTrips).median.toFixed(1)} at ${base.size.toLocaleString('en')})`,
      ),
      mk('scrape', 'one GET /metrics scrape p50', 'scrape'),
    );
  }
  const scans = Object.entries(plans).filter(([, p]) => BIG_TABLES.some((t) => p.includes(`Seq Scan on ${t}`)));
  rows.push({
    id: 'growth.plans',
    section: 'table growth',
    figure: `plans of every statement the worker, the intake, /metrics and /v1/admin/queue-health sent, at ${sizes.at(-1)!.toLocaleString('en')} rows`,
    unit: '',
    value: null,
    baseline: null,
    ratio: null,
    sense: 'info',
    notes:
      scans.length === 0
        ? `${Object.keys(plans).length} statements; no sequential scan on ${BIG_TABLES.join(', ')}`
        : `SEQUENTIAL SCANS of a big table in ${scans.length} of ${Object.keys(plans).length} statements: ${scans.map(([k]) => k.slice(0, 80)).join(' | ')}`,
    details: { plans, sequentialScans: scans.map(([k]) => k) },
  });
  return rows;
}

/** m jobs, submitted one after another, until all succeeded; the worker's Postgres counters over them. */
async function runJobs(d: Db, m: number, tag: string): Promise<{ submitP50: number; worker: PgCounters }> {
  const w0 = await d.child.fresh();
  const lat: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < m; i++) {
    const t = await timed(() =>
      d.app.jobs.submitJob({
        tenantId: TENANT.id,
        type: 'summarize',
        idempotencyKey: `growth-${tag}-${i}`,
        input: { text: `growth ${i}` },
      }),
    );
    lat.push(t.ms);
    ids.push(t.value.jobId);
  }
  await waitUntil(
    `${m} growth jobs (${tag}) to succeed`,
    async () => {
      const r = await d.pool.query<{ ok: number; bad: number }>(
        `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok,
                count(*) FILTER (WHERE status IN ('dead_lettered', 'cancelled'))::int AS bad
           FROM job_intents WHERE job_id = ANY($1::text[])`,
        [ids],
      );
      if (r.rows[0]!.bad > 0) throw new Error(`${r.rows[0]!.bad} growth jobs failed: the product is broken`);
      return r.rows[0]!.ok >= m;
    },
    180_000,
    100,
  );
  const w1 = await d.child.fresh();
  return { submitP50: percentiles(lat).p50, worker: diffPg(w0 as PgCounters, w1 as PgCounters) };
}

async function scrape(d: Db): Promise<void> {
  // On the API port /metrics needs an admin key (F7); the scrape measured is the same.
  const res = await fetch(`${d.app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
}

/** EXPLAIN of every distinct statement the real paths sent at the largest size. */
async function explainAll(stack: BenchStack, d: Db): Promise<Record<string, string>> {
  const file = path.join(stack.tmpDir, `growth-statements-${uid()}.json`);
  await d.child.command('capture');
  const stopHere = captureStatements();
  await runJobs(d, 2, `explain-${uid()}`).catch(() => undefined);
  await scrape(d);
  const qh = await fetch(`${d.app.baseUrl}/v1/admin/queue-health`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  await qh.text();
  const here = stopHere();
  await d.child.command(`dump ${file}`);
  const there = JSON.parse(await fs.readFile(file, 'utf8')) as Array<{ text: string; values?: unknown[] }>;
  const out: Record<string, string> = {};
  for (const st of [...here, ...there]) {
    const key = st.text.replace(/\s+/g, ' ').trim();
    if (out[key] || !/^(select|with|insert|update|delete)\b/i.test(key) || /pg_stat|pg_current_wal|pg_backend_pid/i.test(key)) continue;
    try {
      const r = await d.pool.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${st.text}`, st.values);
      out[key] = describePlan((r.rows[0]!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan);
    } catch (err) {
      out[key] = `(could not EXPLAIN: ${(err as Error).message})`;
    }
  }
  return out;
}

/**
 * Finished synthetic jobs [from, to): one intent, one effect and two attempts each, aged like
 * steady traffic of one job every 4 s: job g was created 4g + 60 s ago and finished 2 s later.
 * The first 1,000 span 67 minutes, longer than any window a health query reads (1 hour), so
 * every size has the same traffic in every window (900 jobs in the last hour, 225 in the last 15
 * minutes) and differs only in older history: the question is how cost grows with the tables,
 * not with the finish rate. (At one job per second the 1k database held 1,000 jobs in its last
 * hour and the 100k one 3,600, and the scrape's hour windows counted that difference.)
 */
async function bulkInsert(db: pg.Pool, from: number, to: number): Promise<void> {
  if (to <= from) return;
  const at = (offsetS: number) => `now() - make_interval(secs => 4 * g + 60 - ${offsetS})`;
  await db.query(
    `INSERT INTO job_intents (job_id, tenant_id, job_type, key_hash, input_hash, input, status, attempts, result, result_fence,
                              workflow_started_at, first_started_at, finished_at, created_at, updated_at)
     SELECT 'synthetic-' || g, $1, 'summarize', md5('key' || g), md5('input' || g), '{"text":"synthetic"}'::jsonb, 'succeeded', 1,
            '{"summary":"synthetic"}'::jsonb, 1, ${at(0)}, ${at(1)}, ${at(2)}, ${at(0)}, ${at(2)}
       FROM generate_series($2::int, $3::int - 1) g`,
    [TENANT.id, from, to],
  );
  await db.query(
    `INSERT INTO effects (effect_key, job_id, tenant_id, step, state, request_hash, provider_id, result, attempts, in_doubt,
                          first_attempt_at, last_attempt_at, updated_at)
     SELECT 'synthetic-' || g || ':summarize', 'synthetic-' || g, $1, 'summarize', 'succeeded', md5('req' || g), 'sum_' || g,
            '{"summary":"synthetic"}'::jsonb, 1, false, ${at(1)}, ${at(1)}, ${at(2)}
       FROM generate_series($2::int, $3::int - 1) g`,
    [TENANT.id, from, to],
  );
  await db.query(
    `INSERT INTO job_attempts (job_id, step, attempt, outcome, status_code, started_at, finished_at)
     SELECT 'synthetic-' || g, s, 1, 'succeeded', 200, ${at(1)}, ${at(2)}
       FROM generate_series($1::int, $2::int - 1) g, unnest(ARRAY['summarize', 'result']) s`,
    [from, to],
  );
  // Steady state, as tables that grew over weeks are: vacuumed (visibility map and hint bits set)
  // and analyzed. Without it, autovacuum's first pass over the freshly inserted rows, and the
  // first reads setting their hint bits, ran during the measurement at 100k rows only.
  for (const t of BIG_TABLES) await db.query(`VACUUM (ANALYZE) ${t}`);
  // The load's dirty pages written now, not by a checkpoint during the measurement. Needs a
  // superuser (the embedded Postgres is run as one); elsewhere the checkpoint comes when it comes.
  await db.query('CHECKPOINT').catch(() => undefined);
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** "ModifyTable > Index Scan using job_intents_pkey on job_intents" style, depth-first. */
function describePlan(p: PlanNode): string {
  const self = `${p['Node Type']}${p['Index Name'] ? ` using ${p['Index Name']}` : ''}${p['Relation Name'] ? ` on ${p['Relation Name']}` : ''}`;
  const kids = (p.Plans ?? []).map(describePlan);
  return kids.length ? `${self} > ${kids.join(' + ')}` : self;
}
