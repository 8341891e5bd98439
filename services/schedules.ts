import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  type Client,
  type ScheduleDescription,
  type ScheduleOptions,
  type ScheduleOverlapPolicy,
  type ScheduleSpec,
} from '@temporalio/client';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import type { ScanInput, ScannedSchedule } from '../contract/scan.js';
import type { TriggerArgs } from '../contract/scan.js';
import type { RetentionInput } from '../contract/retention.js';
import type { ScheduleTiming } from '../job-api/define-triggers.js';
import type { JobRegistry } from '../job-api/registry.js';

/**
 * Temporal Schedules replace cron. A scheduled job type declares its schedule in its own
 * `defineJob({ schedule })` and the registry is the only list of them (`jobScheduleDeclarations`);
 * the compensation scan and the retention cleanup are declared here. `ensureSchedules` creates or
 * updates the Schedules at start.
 */
export type { ScheduleTiming } from '../job-api/define-triggers.js';

interface DeclarationBase {
  /** Stable name; the Schedule ID is `<prefix>.<name>`. Renaming creates a second Schedule. */
  name: string;
  timing: ScheduleTiming;
  /** What to do when a trigger fires while the previous one still runs. */
  overlap: ScheduleOverlapPolicy;
  /** How late a missed action may still be taken after a Temporal outage (min 10 s). */
  catchupWindowMs: number;
  /** Created (or, on a changed declaration, updated) paused. An operator's pause is kept otherwise. */
  paused: boolean;
  description: string;
}

export interface JobScheduleDeclaration extends DeclarationBase {
  kind: 'job';
  jobType: string;
  /** Window length and alignment (UTC). Default for intervals: `every` and `offset`. */
  windowMs?: number;
  windowOffsetMs?: number;
  /** How far back the compensation scan fills missed windows. Default 7 days. */
  fillLookbackMs?: number;
}

export interface ScanScheduleDeclaration extends DeclarationBase {
  kind: 'scan';
  /** Scan options (grace periods, limits); see `ScanInput`. */
  options?: Omit<ScanInput, 'schedules' | 'now'>;
}

export interface RetentionScheduleDeclaration extends DeclarationBase {
  kind: 'retention';
  /** Retention per table and batch size, from the configuration (`Config.retention`). */
  input: RetentionInput;
}

export type ScheduleDeclaration = JobScheduleDeclaration | ScanScheduleDeclaration | RetentionScheduleDeclaration;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The system Schedules' names: a scheduled job type cannot take one (its Schedule ID is `<prefix>.<type>`). */
const SYSTEM_SCHEDULE_NAMES: readonly string[] = ['compensation-scan', 'retention-cleanup'];

/**
 * The Schedule of every job type in `registry` that declares one (`defineJob({ schedule })`),
 * named after the type: its Schedule ID is `<prefix>.<type>`.
 */
export function jobScheduleDeclarations(registry: Pick<JobRegistry, 'modules'>): JobScheduleDeclaration[] {
  return registry.modules.flatMap(({ definition: d }) => {
    if (d.schedule && SYSTEM_SCHEDULE_NAMES.includes(d.name))
      throw new Error(`job type ${d.name}: its Schedule would take the ID of the system schedule of that name; rename the type`);
    return d.schedule
      ? [
          {
            kind: 'job' as const,
            name: d.name,
            jobType: d.name,
            description: `${d.name}: ${d.description}`,
            timing: d.schedule.timing,
            windowMs: d.schedule.windowMs,
            windowOffsetMs: d.schedule.windowOffsetMs,
            fillLookbackMs: d.schedule.fillLookbackMs,
            // The trigger is idempotent and short: buffered triggers are distinct windows, keep them all.
            overlap: 'BUFFER_ALL' as const,
            catchupWindowMs: d.schedule.catchupWindowMs,
            paused: false,
          },
        ]
      : [];
  });
}

/** The compensation scan's Schedule. */
export const COMPENSATION_SCAN: ScanScheduleDeclaration = {
  kind: 'scan',
  name: 'compensation-scan',
  description:
    'finds and repairs missed windows, unstarted intents, stuck outbox rows, in-doubt effects, stuck replays and unsignalled webhooks',
  timing: { every: 10 * MINUTE },
  // A scan covers everything up to its own time: a skipped or missed scan needs no catch-up.
  overlap: 'SKIP',
  catchupWindowMs: 10 * MINUTE,
  paused: false,
};

/** The Schedules of a registry: its scheduled job types' and the compensation scan, which fills their missed windows. */
export function scheduleDeclarations(registry: JobRegistry): ScheduleDeclaration[] {
  return [...jobScheduleDeclarations(registry), COMPENSATION_SCAN];
}

/**
 * The retention cleanup (activities/retention.ts), hourly: each run deletes what expired
 * since the last one, in batches. Its input comes from the configuration, so it is declared
 * from it; `productSchedules` is what the API ensures at start.
 */
export function retentionDeclaration(input: RetentionInput): RetentionScheduleDeclaration {
  return {
    kind: 'retention',
    name: 'retention-cleanup',
    description:
      'deletes rows past their retention period, in small batches, never what a live job, an open dead letter or the idempotency window needs',
    timing: { every: HOUR, offset: 17 * MINUTE },
    // A run covers everything expired up to its own time: a skipped or missed run needs no catch-up.
    overlap: 'SKIP',
    catchupWindowMs: 10 * MINUTE,
    paused: false,
    input,
  };
}

/** Every Schedule a deployment runs: its registry's, the scan and the retention cleanup of this configuration. */
export function productSchedules(
  registry: JobRegistry,
  retention: { days: RetentionInput['days']; batchSize: number },
): ScheduleDeclaration[] {
  return [...scheduleDeclarations(registry), retentionDeclaration({ days: retention.days, batchSize: retention.batchSize })];
}

/** Stable and prefixed (by default with the task queue), so deployments and test files sharing one Temporal never collide. */
export function scheduleIdFor(prefix: string, name: string): string {
  return `${prefix}.${name}`;
}

/** Temporal's schedule times have whole seconds: a finer grid would put nominal times off its boundaries. */
function wholeSeconds(name: string, field: string, ms: number): number {
  if (!Number.isInteger(ms) || ms < 0 || ms % 1_000 !== 0)
    throw new Error(`schedule ${name}: ${field} must be a whole number of seconds (in ms), got ${ms}`);
  return ms;
}

export function windowGridOf(d: JobScheduleDeclaration): { windowMs: number; windowOffsetMs: number } {
  const windowMs = d.windowMs ?? ('every' in d.timing ? d.timing.every : undefined);
  if (!windowMs) throw new Error(`schedule ${d.name}: a cron schedule needs windowMs`);
  const offset = d.windowOffsetMs ?? ('every' in d.timing ? (d.timing.offset ?? 0) : 0);
  return { windowMs: wholeSeconds(d.name, 'windowMs', windowMs), windowOffsetMs: wholeSeconds(d.name, 'windowOffsetMs', offset) };
}

function toSpec(name: string, t: ScheduleTiming): ScheduleSpec {
  if ('every' in t)
    return { intervals: [{ every: wholeSeconds(name, 'every', t.every), offset: wholeSeconds(name, 'offset', t.offset ?? 0) }] };
  return { cronExpressions: t.cron, timezone: t.timezone ?? 'UTC' };
}

export function triggerArgsFor(d: JobScheduleDeclaration, scheduleId: string): TriggerArgs {
  return { schedule: d.name, scheduleId, jobType: d.jobType, ...windowGridOf(d) };
}

/** The scan's input for a set of declarations: every scheduled job type's window grid. Also for running a scan by hand. */
export function scanInputFor(all: ScheduleDeclaration[], prefix: string, options: Omit<ScanInput, 'schedules'> = {}): ScanInput {
  const schedules: ScannedSchedule[] = all
    .filter((x): x is JobScheduleDeclaration => x.kind === 'job')
    .map((x) => ({
      ...triggerArgsFor(x, scheduleIdFor(prefix, x.name)),
      fillLookbackMs: x.fillLookbackMs ?? 7 * DAY,
    }));
  return { ...options, schedules };
}

/** The full Schedule for a declaration; its hash (kept in the action's memo) tells whether an update is due. */
export function scheduleOptionsFor(
  d: ScheduleDeclaration,
  taskQueue: string,
  prefix: string,
  all: ScheduleDeclaration[],
): ScheduleOptions & { declarationHash: string } {
  const scheduleId = scheduleIdFor(prefix, d.name);
  const spec = toSpec(d.name, d.timing);
  const workflowType = d.kind === 'job' ? 'scheduleTrigger' : d.kind === 'scan' ? 'compensationScan' : 'retentionCleanup';
  const args = d.kind === 'job' ? [triggerArgsFor(d, scheduleId)] : d.kind === 'scan' ? [scanInputFor(all, prefix, d.options)] : [d.input];
  const policies = { overlap: d.overlap, catchupWindow: d.catchupWindowMs };
  const declarationHash = createHash('sha256')
    .update(canonicalJson({ spec, workflowType, args, policies, paused: d.paused, taskQueue }))
    .digest('hex')
    .slice(0, 32);
  return {
    scheduleId,
    spec,
    action: {
      type: 'startWorkflow',
      workflowType,
      taskQueue,
      args,
      // Temporal appends `-<nominal time>` to this ID; the trigger derives the job's ID itself.
      workflowId: `${scheduleId}.run`,
      memo: { declarationHash },
      staticSummary: d.description,
    },
    policies,
    state: { paused: d.paused, note: d.paused ? 'declared paused' : undefined },
    declarationHash,
  };
}

export type EnsureOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Creates missing Schedules and updates changed ones (the declaration's hash differs).
 * Idempotent and safe when two processes start at once: a create that loses the race
 * (`ScheduleAlreadyRunning`) falls through to the update check. An unchanged declaration
 * leaves the Schedule alone, so an operator's pause survives a restart.
 */
export async function ensureSchedules(
  client: Client,
  taskQueue: string,
  declarations: ScheduleDeclaration[],
  prefix: string = taskQueue,
): Promise<Array<{ scheduleId: string; outcome: EnsureOutcome }>> {
  const out: Array<{ scheduleId: string; outcome: EnsureOutcome }> = [];
  for (const d of declarations) {
    const { declarationHash, ...options } = scheduleOptionsFor(d, taskQueue, prefix, declarations);
    out.push({ scheduleId: options.scheduleId, outcome: await ensureOne(client, options, declarationHash) });
  }
  return out;
}

async function ensureOne(client: Client, options: ScheduleOptions, hash: string): Promise<EnsureOutcome> {
  const handle = client.schedule.getHandle(options.scheduleId);
  let current: ScheduleDescription | undefined;
  try {
    current = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  if (!current) {
    try {
      await client.schedule.create(options);
      return 'created';
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      current = await handle.describe(); // another process created it meanwhile
    }
  }
  if (current.action.memo?.declarationHash === hash) return 'unchanged';
  const { scheduleId: _id, state, ...rest } = options;
  await handle.update(() => ({ ...rest, state: { paused: state?.paused ?? false, note: state?.note } }));
  return 'updated';
}
