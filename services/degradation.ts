/**
 * Degradation, the use case behind `/v1/admin/degradation`: pausing priorities, the ramp on
 * resume and the fallback switch, each change audited in the same transaction as the setting.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { z } from 'zod';
import { PRIORITIES, type JobType, type Priority } from '../contract/job-types.js';
import { degradationChangedSignal } from '../contract/messages.js';
import { withTransaction } from '../lib/db.js';
import { lockSetting, insertAudit, writeSetting, type DegradationSetting } from '../store/degradation.js';

/** The body of `PUT /v1/admin/degradation` (also the OpenAPI schema), for the registered types that declare a fallback. */
export function degradationBody(fallbackTypes: readonly JobType[]) {
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
          'the body must be a JSON object {"pausedPriorities": [...], "recoveryRatePerMinute"?: number, "fallbackJobTypes"?: [...], "rampStop"?: {...}, "reason"?: string}',
      },
    )
    .strict();
}

type DegradationBody = z.infer<ReturnType<typeof degradationBody>>;

/** Applies a validated change in one transaction: the locked row, the new row, and its audit entry. */
export async function changeSetting(
  pool: pg.Pool,
  body: DegradationBody,
  audit: { actor: string; keyId: string; remoteAddr: string | null },
): Promise<{ before: DegradationSetting; after: DegradationSetting }> {
  return withTransaction(pool, async (tx) => {
    const cur = await lockSetting(tx);
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
    const after = await writeSetting(tx, {
      pausedPriorities: PRIORITIES.filter((p) => body.pausedPriorities.includes(p)),
      pausedSince,
      recoveryRatePerMinute: body.recoveryRatePerMinute ?? before.recoveryRatePerMinute,
      updatedBy: audit.actor,
      fallbackJobTypes,
      fallbackSince,
      rampStop: { ...before.rampStop, ...body.rampStop },
      rampHalted,
    });
    await insertAudit(tx, { ...audit, reason: body.reason ?? null, before, after });
    return { before, after };
  });
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
