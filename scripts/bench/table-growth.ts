// How intake and claim cost change as the tables grow (they must stay flat: every statement
// on the hot path is an index lookup). In a database of its own, synthetic finished jobs are
// bulk-inserted (generate_series) into job_intents, effects and job_attempts up to each size;
// at each size we time submitJob and the claim-path statement set, and EXPLAIN each statement
// the hot path runs (the real SQL, captured from the store functions).
import pg from 'pg';
import { createPool, withTransaction } from '../../lib/db.js';
import { inputHash } from '../../lib/ids.js';
import { recordAttempt } from '../../store/attempts.js';
import { beginEffect, recordEffectSuccess } from '../../store/effects.js';
import {
  findIntentByKey,
  getIntent,
  insertIntent,
  loadInput,
  markRunning,
  markWorkflowStarted,
  othersDeferred,
  writeResultFenced,
} from '../../store/intents.js';
import { TENANT, uid, type BenchStack } from './stack.js';
import { percentiles, row, spread, timed, type BenchRow } from './stats.js';

const BIG_TABLES = ['job_intents', 'effects', 'job_attempts'];

export async function measureTableGrowth(stack: BenchStack): Promise<BenchRow[]> {
  const sizes = stack.quick ? [200, 1_000] : [1_000, 10_000, 100_000];
  const m = stack.quick ? 10 : 100;
  const repeats = stack.quick ? 1 : 3;
  const url = await stack.createDatabase('growth');
  const db = createPool(url, stack.silentLogger, 4);
  const jobs = stack.jobsClient(`bench-growth-noworker-${uid()}`, db);
  const started: string[] = [];
  const submitP50 = new Map<number, number[]>();
  const claimP50 = new Map<number, number[]>();
  const plans: Record<string, Record<string, string>> = {};
  let have = 0;
  try {
    for (const size of sizes) {
      const t = await timed(() => bulkInsert(db, have, size));
      have = size;
      submitP50.set(size, []);
      claimP50.set(size, []);
      for (let r = 0; r < repeats; r++) {
        const sub: number[] = [];
        const claim: number[] = [];
        for (let i = 0; i < m; i++) {
          const s = await timed(() =>
            jobs.submitJob({ tenantId: TENANT.id, type: 'summarize', idempotencyKey: `bench-growth-${uid()}`, input: { text: 'growth' } }),
          );
          started.push(s.value.jobId);
          sub.push(s.ms);
          claim.push((await timed(() => claimPath(db, s.value.jobId))).ms);
        }
        submitP50.get(size)!.push(percentiles(sub).p50);
        claimP50.get(size)!.push(percentiles(claim).p50);
      }
      plans[String(size)] = await explainHotPath(db);
      stack.log(
        `  table growth ${size} rows (inserted in ${(t.ms / 1000).toFixed(1)} s): submit p50 ${spread(submitP50.get(size)!).median.toFixed(2)} ms, claim set p50 ${spread(claimP50.get(size)!).median.toFixed(2)} ms`,
      );
    }
  } finally {
    await db.end();
    if (!stack.embeddedTemporal) {
      for (const id of started)
        await stack.temporal.workflow
          .getHandle(id)
          .terminate('benchmark table growth')
          .catch(() => undefined);
    }
  }
  const base = sizes[0]!;
  const rows: BenchRow[] = [];
  for (const size of sizes.slice(1)) {
    rows.push(
      row({
        id: `growth.submit.${size}`,
        section: 'table growth',
        figure: `submitJob p50 with ${size.toLocaleString('en')} rows per table`,
        unit: 'ms',
        value: spread(submitP50.get(size)!),
        baseline: { label: `same with ${base.toLocaleString('en')} rows`, unit: 'ms', value: spread(submitP50.get(base)!) },
        sense: 'lower-better',
      }),
    );
    rows.push(
      row({
        id: `growth.claim.${size}`,
        section: 'table growth',
        figure: `claim path p50 (markRunning, beginEffect, recordEffectSuccess, recordAttempt, fenced result) with ${size.toLocaleString('en')} rows`,
        unit: 'ms',
        value: spread(claimP50.get(size)!),
        baseline: { label: `same with ${base.toLocaleString('en')} rows`, unit: 'ms', value: spread(claimP50.get(base)!) },
        sense: 'lower-better',
      }),
    );
  }
  const largest = plans[String(sizes.at(-1))] ?? {};
  const scans = Object.entries(largest).filter(([, p]) => BIG_TABLES.some((t) => p.includes(`Seq Scan on ${t}`)));
  rows.push({
    id: 'growth.plans',
    section: 'table growth',
    figure: `hot-path plans at ${sizes.at(-1)!.toLocaleString('en')} rows`,
    unit: '',
    value: null,
    baseline: null,
    ratio: null,
    sense: 'info',
    notes:
      scans.length === 0
        ? 'no sequential scan on job_intents, effects or job_attempts'
        : `SEQUENTIAL SCANS: ${scans.map(([k]) => k).join(', ')}`,
    details: { plans },
  });
  return rows;
}

/** Finished synthetic jobs [from, to): one intent, one effect and two attempts each. */
async function bulkInsert(db: pg.Pool, from: number, to: number): Promise<void> {
  if (to <= from) return;
  await db.query(
    `INSERT INTO job_intents (job_id, tenant_id, job_type, key_hash, input_hash, input, status, attempts, result, result_fence,
                              workflow_started_at, first_started_at, finished_at, created_at, updated_at)
     SELECT 'synthetic-' || g, $1, 'summarize', md5('key' || g), md5('input' || g), '{"text":"synthetic"}'::jsonb, 'succeeded', 1,
            '{"summary":"synthetic"}'::jsonb, 1, now(), now(), now(), now() - make_interval(secs => g), now()
       FROM generate_series($2::int, $3::int - 1) g`,
    [TENANT.id, from, to],
  );
  await db.query(
    `INSERT INTO effects (effect_key, job_id, tenant_id, step, state, request_hash, provider_id, result, attempts, in_doubt)
     SELECT 'synthetic-' || g || ':summarize', 'synthetic-' || g, $1, 'summarize', 'succeeded', md5('req' || g), 'sum_' || g,
            '{"summary":"synthetic"}'::jsonb, 1, false
       FROM generate_series($2::int, $3::int - 1) g`,
    [TENANT.id, from, to],
  );
  await db.query(
    `INSERT INTO job_attempts (job_id, step, attempt, outcome, status_code, started_at)
     SELECT 'synthetic-' || g, s, 1, 'succeeded', 200, now()
       FROM generate_series($1::int, $2::int - 1) g, unnest(ARRAY['summarize', 'result']) s`,
    [from, to],
  );
  for (const t of BIG_TABLES) await db.query(`ANALYZE ${t}`);
}

/** The statements one summarize attempt runs on its job's rows, in order. */
async function claimPath(db: pg.Pool, jobId: string): Promise<void> {
  const startedAt = new Date();
  await markRunning(db, jobId, 1);
  const effectKey = `${jobId}:summarize`;
  await beginEffect(db, {
    effectKey,
    jobId,
    tenantId: TENANT.id,
    step: 'summarize',
    requestHash: inputHash('summarize', { text: 'growth' }),
  });
  await recordEffectSuccess(db, effectKey, 'req_bench', 'sum_bench', { summary: 'growth' });
  await recordAttempt(db, { jobId, step: 'summarize', attempt: 1, outcome: 'succeeded', statusCode: 200, startedAt });
  const ok = await withTransaction(db, (tx) => writeResultFenced(tx, jobId, 1, { summary: 'growth' }, null));
  if (!ok) throw new Error(`fenced result write refused for a fresh job ${jobId}`);
}

/** EXPLAIN of each hot-path statement, with the SQL the store functions really send. */
async function explainHotPath(db: pg.Pool): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const via = (name: string) =>
    ({
      query: async (text: string, params?: unknown[]) => {
        const r = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
        out[name] = describePlan((r.rows[0]!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan);
        return { rows: [{}], rowCount: 1 };
      },
    }) as unknown as pg.Pool;
  const jobId = 'synthetic-7';
  const effectKey = `${jobId}:summarize`;
  await insertIntent(via('insertIntent'), {
    jobId: `new-${uid()}`,
    tenantId: TENANT.id,
    jobType: 'summarize',
    keyHash: 'k',
    inputHash: 'i',
    input: {},
    priority: 'normal',
  });
  await findIntentByKey(via('findIntentByKey (duplicate)'), TENANT.id, 'k');
  await markWorkflowStarted(via('markWorkflowStarted'), jobId);
  await getIntent(via('getIntent (admission gate)'), jobId);
  await othersDeferred(via('othersDeferred (admission gate)'), 'normal', jobId);
  await loadInput(via('loadInput'), jobId);
  await markRunning(via('markRunning'), jobId, 1);
  await beginEffect(via('beginEffect'), { effectKey, jobId, tenantId: TENANT.id, step: 'summarize', requestHash: 'r' });
  await recordEffectSuccess(via('recordEffectSuccess'), effectKey, null, null, {});
  await recordAttempt(via('recordAttempt'), { jobId, step: 'summarize', attempt: 1, outcome: 'succeeded', startedAt: new Date() });
  await writeResultFenced(via('writeResultFenced'), jobId, 2, {}, null);
  return out;
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
