import { Context } from '@temporalio/activity';
import { NonRetryableError } from '../lib/errors.js';
import { unkeyed } from '../lib/ids.js';
import { findUnstorableText } from '../lib/json-safety.js';
import { getIntent, insertIntent, markWorkflowStarted } from '../store/intents.js';
import { markWindowFilled, recordWindowSeen } from '../store/schedules.js';
import { listTenantIds } from '../store/tenants.js';
import type { JobDefinition } from '../job-api/define.js';
import { windowKey, type ScheduleWindow } from '../contract/schedule-window.js';
import { onStartPath, startJobWorkflow } from '../services/start-job.js';
import type { ActivityDeps } from './deps.js';

export interface EnsureWindowArgs {
  scheduleId: string;
  /** A registered type with a `schedule` (`defineJob`): its input and tenants come from there. */
  jobType: string;
  window: ScheduleWindow;
  source: 'schedule' | 'manual' | 'scan';
  /** The trigger's (or scan's) workflow ID, kept as evidence of who saw the window first. */
  triggerId: string;
}

export interface EnsureWindowResult {
  /** This call recorded the window first. */
  firstTrigger: boolean;
  /** This call completed the window (every tenant's job started); a repeat finds it done. */
  filledNow: boolean;
  jobIds: string[];
}

/**
 * The window's input, from the type's `schedule.input(window)`, checked like a submitted one: a
 * definition whose input function disagrees with its schema is a bug no retry fixes.
 */
function scheduledInput(definition: JobDefinition, window: ScheduleWindow): unknown {
  const parsed = definition.input.safeParse(definition.schedule!.input(window));
  const problem = parsed.success
    ? findUnstorableText(parsed.data, 'input')
    : { path: parsed.error.issues[0]?.path.join('.') ?? '', message: parsed.error.issues[0]?.message ?? 'invalid' };
  if (problem)
    throw new NonRetryableError(
      `job type ${definition.name}: schedule.input(window) does not fit its input schema: ${problem.path} ${problem.message}`,
      {
        errorClass: 'schedule_input_invalid',
      },
    );
  return parsed.data;
}

/** The schedule activities. Function names are Temporal activity types. */
export function createScheduleActivities(deps: ActivityDeps) {
  return {
    /**
     * The trigger logic, for the Schedule's trigger, a manual start and the scan alike:
     * record the window (unique), then per tenant insert the window's intent (its key
     * derives from the window, so the unique index allows one) and start or find its
     * workflow. Every step is idempotent, so a retry or a concurrent trigger is harmless.
     */
    async ensureWindowJobs(a: EnsureWindowArgs): Promise<EnsureWindowResult> {
      const ctx = Context.current();
      const definition = deps.jobs.get(a.jobType);
      if (!definition?.schedule)
        throw new NonRetryableError(`job type ${a.jobType} is not registered on this worker with a schedule`, {
          errorClass: 'schedule_unknown_type',
        });
      const input = scheduledInput(definition, a.window);
      const tenants = definition.schedule.perTenant ? await listTenantIds(deps.pool) : [definition.schedule.tenant!];
      const firstTrigger = await recordWindowSeen(deps.pool, {
        jobType: a.jobType,
        windowStart: a.window.start,
        windowEnd: a.window.end,
        scheduleId: a.scheduleId,
        source: a.source,
        triggerId: a.triggerId,
      });
      const jobIds: string[] = [];
      for (const tenantId of tenants) {
        const key = windowKey(a.jobType, a.window);
        // Unkeyed on purpose: a window's key is public (its type and time), and an unkeyed ID is
        // the same across a deploy or a rotation of the server secret: still one job per window.
        const jobId = unkeyed.jobIdFor(tenantId, a.jobType, key);
        await insertIntent(deps.pool, {
          jobId,
          tenantId,
          jobType: a.jobType,
          keyHash: unkeyed.keyHash(tenantId, key),
          inputHash: unkeyed.inputHash(a.jobType, input),
          input,
          priority: 'normal',
        });
        if (!(await getIntent(deps.pool, jobId))) {
          throw new NonRetryableError(`window intent ${jobId} could not be stored`, { errorClass: 'window_intent_conflict' });
        }
        await startJobWorkflow(
          ctx.client,
          ctx.info.taskQueue,
          onStartPath(definition, deps.fastPathTypes),
          { jobId, tenantId, jobType: a.jobType, priority: 'normal' },
          deps.jobBudgets,
        );
        await markWorkflowStarted(deps.pool, jobId);
        jobIds.push(jobId);
        ctx.heartbeat();
      }
      const filledNow = await markWindowFilled(deps.pool, a.jobType, a.window.start, jobIds.length);
      deps.log.info(
        { scheduleId: a.scheduleId, jobType: a.jobType, windowStart: a.window.start, source: a.source, firstTrigger, jobs: jobIds.length },
        firstTrigger ? 'scheduled window: jobs started' : 'scheduled window seen again: existing jobs kept',
      );
      return { firstTrigger, filledNow, jobIds };
    },
  };
}
