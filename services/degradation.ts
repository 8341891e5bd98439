/**
 * Degradation, the use case behind `/v1/admin/degradation`: pausing priorities, the ramp on
 * resume and the fallback switch, each change audited in the same transaction as the setting.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { z } from 'zod';
import { PRIORITIES, type JobType, type Priority } from '../contract/job-types.js';
import { degradationChangedSignal } from '../contract/messages.js';
import { pgOr503, withTransaction } from '../lib/db.js';
import { ValidationError } from '../lib/errors.js';
import { zodFieldIssues } from '../lib/validation.js';
import {
  getSetting,
  lockSetting,
  insertAudit,
  sameScope,
  writeSetting,
  type DegradationSetting,
  type PauseScope,
} from '../store/degradation.js';
import { tenantExists } from '../store/tenants.js';
import { TENANT_ID } from './tenants.js';

/** A pause's target (issue 38 §4): a job type, a tenant, or both; the registered type names. */
export function pauseScopeSchema(jobTypes: readonly string[]) {
  const typeMessage = `must be a registered job type: ${jobTypes.join(', ')}`;
  return z
    .object(
      {
        tenantId: TENANT_ID.optional().describe('pause this tenant (with jobType: only its jobs of that type)'),
        jobType: z
          .enum(jobTypes.length > 0 ? (jobTypes as [string, ...string[]]) : ['\u0000'], { error: typeMessage })
          .optional()
          .describe("pause this job type (with tenantId: only that tenant's)"),
      },
      { error: 'must be an object {"tenantId"?, "jobType"?}' },
    )
    .strict()
    .refine((p) => p.tenantId !== undefined || p.jobType !== undefined, {
      message: 'name a tenantId, a jobType, or both (a priority is paused with pausedPriorities / priority)',
      path: ['tenantId'],
    });
}

/** The body of `POST /v1/admin/pauses` and `POST /v1/admin/pauses/resume`: one target, a priority or a scope. */
export function pauseBody(jobTypes: readonly string[]) {
  return z
    .object(
      {
        priority: z.enum(PRIORITIES, { error: 'must be one of: high, normal, low' }).optional(),
        tenantId: TENANT_ID.optional(),
        jobType: z
          .enum(jobTypes.length > 0 ? (jobTypes as [string, ...string[]]) : ['\u0000'], {
            error: `must be a registered job type: ${jobTypes.join(', ')}`,
          })
          .optional(),
        reason: z
          .string({ error: 'must be a string' })
          .trim()
          .min(1, 'must not be empty')
          .max(500, 'must be at most 500 characters')
          .optional(),
      },
      { error: 'the body must be a JSON object {"priority"?, "tenantId"?, "jobType"?, "reason"?}' },
    )
    .strict()
    .refine((b) => (b.priority !== undefined) !== (b.tenantId !== undefined || b.jobType !== undefined), {
      message: 'name either a priority, or a tenantId and/or a jobType (not both kinds)',
      path: ['priority'],
    });
}

export type PauseTarget = z.infer<ReturnType<typeof pauseBody>>;

/** The body of `PUT /v1/admin/degradation` (also the OpenAPI schema), for the registered types that declare a fallback. */
export function degradationBody(fallbackTypes: readonly JobType[], jobTypes: readonly string[] = []) {
  const fallbackTypesMessage =
    fallbackTypes.length > 0
      ? `each entry must be a job type that declares a fallback upstream: ${fallbackTypes.join(', ')}`
      : 'no job type declares a fallback upstream';
  return z
    .object(
      {
        pausedPriorities: z
          .array(z.enum(PRIORITIES, { error: 'each entry must be one of: high, normal, low' }), {
            error: 'must be an array of priorities (high, normal, low); [] pauses nothing',
          })
          .refine((a) => new Set(a).size === a.length, 'must not name a priority twice'),
        // Omitted: unchanged. [] lifts every pause of a type or tenant.
        pausedScopes: z
          .array(pauseScopeSchema(jobTypes), { error: 'must be an array of {"tenantId"?, "jobType"?}; [] pauses none' })
          .max(100, 'at most 100 pauses')
          .refine((a) => a.every((p, i) => a.findIndex((q) => sameScope(p, q)) === i), 'must not name a pause twice')
          .optional()
          .describe('pauses by job type, tenant or both (issue 38 §4); omitted: unchanged'),
        recoveryRatePerMinute: z
          .number({ error: 'must be a number of jobs per minute' })
          .int('must be a whole number of jobs per minute')
          .min(1, 'must be at least 1 job per minute')
          .max(10_000, 'must be at most 10000 jobs per minute')
          .optional(),
        rampStop: z
          .object(
            {
              failureRatio: z
                .number({ error: 'must be a number' })
                .gt(0, 'must be above 0')
                .max(1, 'must be at most 1')
                .optional()
                .describe('share of failed upstream attempts that halts the ramp (default 0.5)'),
              windowSeconds: z
                .number({ error: 'must be a number of seconds' })
                .int('must be whole seconds')
                .min(5, 'must be at least 5 seconds')
                .max(3_600, 'must be at most 3600 seconds')
                .optional()
                .describe('the window the share is taken over (default 60 s)'),
              minAttempts: z
                .number({ error: 'must be a number of attempts' })
                .int('must be a whole number')
                .min(1, 'must be at least 1')
                .max(100_000, 'must be at most 100000')
                .optional()
                .describe('fewer attempts in the window never halt the ramp (default 10)'),
            },
            { error: 'must be an object {"failureRatio"?, "windowSeconds"?, "minAttempts"?}' },
          )
          .strict()
          .optional()
          .describe("the ramp's stop condition; omitted fields keep their value"),
        reason: z
          .string({ error: 'must be a string' })
          .trim()
          .min(1, 'must not be empty')
          .max(500, 'must be at most 500 characters')
          .optional(),
        // Omitted: unchanged. [] switches every type back to the primary for new effects.
        fallbackJobTypes: z
          .array(z.enum(fallbackTypes as [string, ...string[]], { error: fallbackTypesMessage }), {
            error: 'must be an array of job types; [] uses the primary upstream for all',
          })
          .refine((a) => new Set(a).size === a.length, 'must not name a job type twice')
          .optional()
          .describe('job types whose new effects go to the fallback upstream (PROVIDER_FALLBACK_URL); omitted: unchanged'),
      },
      {
        error:
          'the body must be a JSON object {"pausedPriorities": [...], "pausedScopes"?: [...], "recoveryRatePerMinute"?: number, "fallbackJobTypes"?: [...], "rampStop"?: {...}, "reason"?: string}',
      },
    )
    .strict();
}

type DegradationBody = z.infer<ReturnType<typeof degradationBody>>;

type Audit = { actor: string; keyId: string; remoteAddr: string | null };

/**
 * Every tenant a pause names exists: a typo would pause nothing and look like it worked.
 * Checked before the change's transaction; a tenant removed in between pauses nothing.
 */
async function requireTenants(pool: pg.Pool, scopes: ReadonlyArray<{ tenantId?: string | undefined }>, path: string): Promise<void> {
  for (const [i, p] of scopes.entries()) {
    if (p.tenantId !== undefined && !(await tenantExists(pool, p.tenantId)))
      throw new ValidationError('unknown tenant', [{ path: path.replace('{i}', String(i)), message: `no tenant "${p.tenantId}"` }]);
  }
}

/** Applies a validated change in one transaction: the locked row, the new row, and its audit entry. */
export async function changeSetting(
  pool: pg.Pool,
  body: DegradationBody,
  audit: Audit,
): Promise<{ before: DegradationSetting; after: DegradationSetting }> {
  if (body.pausedScopes) await requireTenants(pool, body.pausedScopes, 'pausedScopes.{i}.tenantId');
  return withTransaction(pool, async (tx) => {
    const cur = await lockSetting(tx);
    return applyChange(tx, cur, body, audit);
  });
}

/**
 * Pauses or resumes one target (a priority, or a type, tenant or pair), the rest unchanged:
 * `POST /v1/admin/pauses[/resume]`, `durable-jobs pause`. Read and written under the setting's
 * lock, so two operators pausing different things at once both land.
 */
export async function changePause(
  pool: pg.Pool,
  op: 'pause' | 'resume',
  target: PauseTarget,
  audit: Audit,
): Promise<{ before: DegradationSetting; after: DegradationSetting }> {
  if (op === 'pause') await requireTenants(pool, [target], 'tenantId');
  return withTransaction(pool, async (tx) => {
    const cur = await lockSetting(tx);
    const scope = target.priority === undefined ? { tenantId: target.tenantId, jobType: target.jobType } : undefined;
    const priorities =
      target.priority === undefined
        ? cur.pausedPriorities
        : op === 'pause'
          ? [...new Set([...cur.pausedPriorities, target.priority])]
          : cur.pausedPriorities.filter((p) => p !== target.priority);
    const others = cur.pausedScopes.filter((p) => !scope || !sameScope(p, scope));
    const scopes = scope && op === 'pause' ? [...others, scope] : others;
    return applyChange(tx, cur, { pausedPriorities: priorities, pausedScopes: scopes, reason: target.reason }, audit);
  });
}

async function applyChange(
  tx: pg.PoolClient,
  cur: DegradationSetting & { now: Date },
  body: Pick<DegradationBody, 'pausedPriorities' | 'recoveryRatePerMinute' | 'fallbackJobTypes' | 'rampStop' | 'reason'> & {
    pausedScopes?: ReadonlyArray<{ tenantId?: string | undefined; jobType?: string | undefined }> | undefined;
  },
  audit: Audit,
): Promise<{ before: DegradationSetting; after: DegradationSetting }> {
  const { now, ...before } = cur;
  // A priority that stays paused keeps its original "since"; a newly paused one starts now.
  const pausedSince: Partial<Record<Priority, string>> = {};
  for (const p of body.pausedPriorities) pausedSince[p] = before.pausedSince[p] ?? now.toISOString();
  // Likewise a type that stays on the fallback keeps when and by whom it was switched.
  const fallbackJobTypes = body.fallbackJobTypes ? [...body.fallbackJobTypes].sort() : before.fallbackJobTypes;
  const fallbackSince = Object.fromEntries(
    fallbackJobTypes.map((t) => [t, before.fallbackSince[t] ?? { at: now.toISOString(), by: audit.actor }]),
  );
  // A ramp halted by its stop condition stays on record until the operator resumes a priority it paused.
  const halted = before.rampHalted;
  const rampHalted = halted && halted.priorities.every((p) => body.pausedPriorities.includes(p)) ? halted : null;
  // A pause that stays keeps its since, its operator and its reason; a new one starts now.
  const pausedScopes: PauseScope[] = body.pausedScopes
    ? body.pausedScopes.map(
        (p) =>
          before.pausedScopes.find((q) => sameScope(q, p)) ?? {
            ...(p.tenantId !== undefined ? { tenantId: p.tenantId } : {}),
            ...(p.jobType !== undefined ? { jobType: p.jobType } : {}),
            since: now.toISOString(),
            by: audit.actor,
            ...(body.reason ? { reason: body.reason } : {}),
          },
      )
    : before.pausedScopes;
  const after = await writeSetting(tx, {
    pausedPriorities: PRIORITIES.filter((p) => body.pausedPriorities.includes(p)),
    pausedSince,
    pausedScopes,
    recoveryRatePerMinute: body.recoveryRatePerMinute ?? before.recoveryRatePerMinute,
    updatedBy: audit.actor,
    fallbackJobTypes,
    fallbackSince,
    rampStop: { ...before.rampStop, ...body.rampStop },
    rampHalted,
  });
  await insertAudit(tx, { ...audit, reason: body.reason ?? null, before, after });
  return { before, after };
}

/** A change lifted a pause (or changed the rate): deferred jobs are worth a nudge. */
export function liftedAny(before: DegradationSetting, after: DegradationSetting): boolean {
  return (
    before.pausedPriorities.some((p) => !after.pausedPriorities.includes(p)) ||
    before.pausedScopes.some((p) => !after.pausedScopes.some((q) => sameScope(p, q))) ||
    before.recoveryRatePerMinute !== after.recoveryRatePerMinute
  );
}

/**
 * Wakes deferred jobs so they re-check now instead of at their next poll. Best-effort (the
 * poll is the guarantee): visibility is eventually consistent and a signal may miss a job.
 */
export async function nudgeDeferred(deps: { temporal: Client; taskQueues: readonly string[] }): Promise<number> {
  let n = 0;
  for (const tq of deps.taskQueues) {
    const query = `JobState = 'deferred' AND ExecutionStatus = 'Running' AND TaskQueue = '${tq.replace(/'/g, '')}'`;
    const batch: Promise<unknown>[] = [];
    for await (const wf of deps.temporal.workflow.list({ query })) {
      batch.push(
        deps.temporal.workflow
          .getHandle(wf.workflowId, wf.runId)
          .signal(degradationChangedSignal)
          .catch(() => undefined),
      );
      n++;
      if (batch.length >= 20) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
  }
  return n;
}

/** What is paused now (`GET /v1/admin/pauses`, `createPausesAdmin().list()`). */
export interface Pauses {
  pausedPriorities: Priority[];
  pausedSince: Partial<Record<Priority, string>>;
  pausedScopes: PauseScope[];
  recoveryRatePerMinute: number;
}

/** What is paused, out of the whole setting. */
export const pausesOf = (s: DegradationSetting): Pauses => ({
  pausedPriorities: s.pausedPriorities,
  pausedSince: s.pausedSince,
  pausedScopes: s.pausedScopes,
  recoveryRatePerMinute: s.recoveryRatePerMinute,
});

export interface PausesAdmin {
  list(): Promise<Pauses>;
  /**
   * Pauses a priority, or a job type, a tenant or a tenant's type: jobs not yet started wait
   * (`deferred`), started ones stop at their next step with no attempt spent. Audited under
   * `actor` (default `client`). `ValidationError` names a bad field or an unknown tenant.
   */
  pause(target: PauseTarget, opts?: { actor?: string }): Promise<Pauses>;
  /** Lifts that pause; the jobs it held resume at the recovery rate (the ramp). */
  resume(target: PauseTarget, opts?: { actor?: string }): Promise<Pauses>;
}

/**
 * `createPausesAdmin(pool, jobTypes)`: pauses for backend code, with the HTTP API's validation
 * and audit. Deferred jobs re-check on their own within their poll (at most 5 min); the HTTP
 * API also nudges them at once, which needs Temporal.
 */
export function createPausesAdmin(pool: pg.Pool, jobTypes: readonly string[]): PausesAdmin {
  const schema = pauseBody(jobTypes);
  const change = async (op: 'pause' | 'resume', target: PauseTarget, actor = 'client') => {
    const parsed = schema.safeParse(target);
    if (!parsed.success) throw new ValidationError(`invalid ${op}`, zodFieldIssues(parsed.error));
    const { after } = await pgOr503(() => changePause(pool, op, parsed.data, { actor, keyId: 'client', remoteAddr: null }));
    return pausesOf(after);
  };
  return {
    list: async () => pausesOf(await pgOr503(() => getSetting(pool))),
    pause: (target, opts = {}) => change('pause', target, opts.actor),
    resume: (target, opts = {}) => change('resume', target, opts.actor),
  };
}
