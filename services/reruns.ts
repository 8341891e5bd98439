/**
 * Reruns (issue 38 §3): a finished job (succeeded, cancelled or dead-lettered) runs again as a
 * NEW job `<jobId>-rerun-<n>`, linked to it by `rerun_of`; the original keeps its row, result and
 * history. A rerun has its own effect scope (its job ID), so every effect executes again with a
 * fresh key, the upstream seeing a new Idempotency-Key; `fromStep` copies the original's
 * succeeded effects of the steps before it into the rerun's scope, so those are reused (no
 * upstream call) and the named step and the ones after it execute again. HTTP-free.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { isTerminalState, type JobArgs } from '../contract/job-types.js';
import type { JobRegistry } from '../job-api/registry.js';
import { withTransaction } from '../lib/db.js';
import { NotFoundError, StateConflictError, ValidationError } from '../lib/errors.js';
import { effectKeyFor } from '../lib/ids.js';
import { effectsForJob } from '../store/effects.js';
import { getIntent, insertIntent, loadInput, markWorkflowStarted, type IntentRow } from '../store/intents.js';
import { copySucceededEffects, insertRerunAction, lockIntentForRerun, markRerun, rerunCount } from '../store/reruns.js';
import { onStartPath, startJobWorkflow } from './start-job.js';

export interface RerunDeps {
  pool: pg.Pool;
  temporal: Client;
  jobs: Pick<JobRegistry, 'get'>;
  /** The jobs task queue (a type with its own queue runs there). */
  taskQueue: string;
  /** Types whose new jobs take the fast path (`FAST_PATH_JOB_TYPES`); default none. */
  fastPath?: ReadonlySet<string>;
}

export interface RerunEffectPreview {
  step: string;
  /** The rerun's key for this effect (`<rerunJobId>:<step>`). */
  effectKey: string;
  /** `reuse`: the original's stored success is copied, no upstream call; `execute`: called again with the new key. */
  action: 'reuse' | 'execute';
  /** The original's effect for this step. */
  original: { effectKey: string; state: 'succeeded' | 'failed' | 'pending' | 'absent' };
}

export interface RerunPlan {
  jobId: string;
  tenantId: string;
  jobType: string;
  status: string;
  rerunJobId: string;
  fromStep: string | null;
  effects: RerunEffectPreview[];
}

/** The original's effects live under its scope: a replay job's are its original job's. */
const scopeOf = (row: Pick<IntentRow, 'job_id' | 'replay_of'>) => row.replay_of ?? row.job_id;

/** Refuses what can never be rerun: unknown job, a job still running (409), an unknown type or step. */
function refuse(row: IntentRow | undefined, jobId: string): IntentRow {
  if (!row) throw new NotFoundError(`job ${jobId} not found`);
  if (!isTerminalState(row.status)) {
    throw new StateConflictError(`job ${jobId} is ${row.status}; only a finished job (succeeded, cancelled or dead-lettered) is rerun`, {
      slug: 'job-not-finished',
      title: 'Job not finished',
      extra: { jobId, jobState: row.status },
    });
  }
  return row;
}

/**
 * What a rerun of `jobId` would do, per effect, without changing anything. `db` may be a
 * transaction that holds the original's lock (the rerun itself), so the number is exact.
 */
export async function planRerun(
  db: pg.Pool | pg.PoolClient,
  jobs: Pick<JobRegistry, 'get'>,
  jobId: string,
  fromStep?: string,
): Promise<RerunPlan> {
  const row = refuse(await getIntent(db, jobId), jobId);
  const definition = jobs.get(row.job_type);
  if (!definition)
    throw new StateConflictError(`job type ${row.job_type} is not registered with this API, so no worker of this deployment runs it`, {
      slug: 'job-type-unknown',
      title: 'Job type not registered',
      extra: { jobTypes: [row.job_type] },
    });
  const input = ((await loadInput(db, jobId)) ?? {}) as Record<string, unknown>;
  const scope = scopeOf(row);
  const stored = await effectsForJob(db, scope);
  const steps = [...definition.effectsFor(input)];
  for (const e of stored) if (!steps.includes(e.step)) steps.push(e.step);
  const from = fromStep === undefined ? 0 : steps.indexOf(fromStep);
  if (from < 0) {
    throw new ValidationError('invalid rerun request', [
      { path: 'fromStep', message: `not an effect step of this job; one of: ${steps.join(', ') || '(none)'}` },
    ]);
  }
  const rerunJobId = `${jobId}-rerun-${(await rerunCount(db, jobId)) + 1}`;
  const effects = steps.map((step, i): RerunEffectPreview => {
    const e = stored.find((s) => s.effect_key === effectKeyFor(scope, step));
    const state = e?.state ?? 'absent';
    const reuse = fromStep !== undefined && i < from && state === 'succeeded';
    return {
      step,
      effectKey: effectKeyFor(rerunJobId, step),
      action: reuse ? 'reuse' : 'execute',
      original: { effectKey: effectKeyFor(scope, step), state },
    };
  });
  return {
    jobId,
    tenantId: row.tenant_id,
    jobType: row.job_type,
    status: row.status,
    rerunJobId,
    fromStep: fromStep ?? null,
    effects,
  };
}

/**
 * Writes the rerun (its intent row, linked; the reused effects copied) in one transaction under
 * the original's row lock, and calls `inTx` inside it (a bulk action records its audit row there,
 * so a retried activity finds it and never makes a second rerun). A single rerun names its
 * operator (`actor`): its audit row (`job_actions`) is written in the same transaction. Then starts its workflow, as
 * the intake does: a failed start leaves an intent without a workflow, which the compensation
 * scan starts (services/start-job.ts).
 */
export async function startRerun(
  deps: RerunDeps,
  jobId: string,
  o: { fromStep?: string; actor?: string; inTx?: (tx: pg.PoolClient, plan: RerunPlan) => Promise<void> } = {},
): Promise<RerunPlan> {
  const plan = await withTransaction(deps.pool, async (tx) => {
    if (!(await lockIntentForRerun(tx, jobId))) throw new NotFoundError(`job ${jobId} not found`);
    const p = await planRerun(tx, deps.jobs, jobId, o.fromStep);
    const original = (await getIntent(tx, jobId))!;
    await insertIntent(tx, {
      jobId: p.rerunJobId,
      tenantId: original.tenant_id,
      jobType: original.job_type,
      keyHash: null,
      inputHash: original.input_hash,
      input: await loadInput(tx, jobId),
      priority: original.priority,
      tags: original.tags ?? null,
    });
    await markRerun(tx, p.rerunJobId, jobId, p.fromStep);
    const reused = p.effects.filter((e) => e.action === 'reuse').map((e) => e.step);
    await copySucceededEffects(tx, scopeOf(original), p.rerunJobId, reused);
    if (o.actor !== undefined) await insertRerunAction(tx, { jobId, rerunJobId: p.rerunJobId, actor: o.actor, fromStep: p.fromStep });
    await o.inTx?.(tx, p);
    return p;
  });
  await startPlanned(deps, plan);
  return plan;
}

/** Starts a planned rerun's workflow (idempotent: a started or finished run with its ID is left alone). */
export async function startPlanned(deps: RerunDeps, p: Pick<RerunPlan, 'rerunJobId' | 'tenantId' | 'jobType'>): Promise<void> {
  const definition = deps.jobs.get(p.jobType)!;
  const row = await getIntent(deps.pool, p.rerunJobId);
  const args: JobArgs = { jobId: p.rerunJobId, tenantId: p.tenantId, jobType: p.jobType, priority: row!.priority };
  await startJobWorkflow(deps.temporal, deps.taskQueue, onStartPath(definition, deps.fastPath), args);
  await markWorkflowStarted(deps.pool, p.rerunJobId);
}
