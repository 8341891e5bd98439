/**
 * A job type's triggers, declared in its `defineJob(...)`: a `schedule` (Temporal Schedules
 * start one job per window, per tenant) and a `webhook` (a verified event from one source is
 * routed to a new job or to a running one). Workflow-safe like the rest of the definition:
 * plain data and pure functions, checked when the definition is made, so a bad cron or a bad
 * source name stops the process that loads the type, naming it.
 */
import type { ScheduleWindow } from '../contract/schedule-window.js';

export type { ScheduleWindow } from '../contract/schedule-window.js';

/** When a schedule fires: an interval (aligned at the Unix epoch plus offset) or cron. */
export type ScheduleTiming = { every: number; offset?: number } | { cron: string[]; timezone?: string };

export interface ScheduleTriggerOptions<I> {
  /**
   * Cron expressions (5 fields: minute hour day-of-month month day-of-week, or `@daily`,
   * `@hourly`, ...), in `timezone`. Exactly one of `cron` and `every`.
   */
  cron?: string | readonly string[];
  /** The cron's time zone (IANA name). Default `UTC`. */
  timezone?: string;
  /** Or: fire every this many milliseconds (whole seconds), aligned at the Unix epoch plus `offset`. */
  every?: number;
  /** Alignment of `every` (ms, whole seconds). Default 0. */
  offset?: number;
  /**
   * The window one firing stands for: one job per window (and tenant), its ID derived from the
   * window. Default for `every`: `every` and `offset`. Required with `cron`.
   */
  window?: { length: number; offset?: number };
  /** One job per tenant and window (true), or one per window for `tenant` (false). Default true. */
  perTenant?: boolean;
  /** With `perTenant: false`: the tenant whose job it is. */
  tenant?: string;
  /** How late a firing missed during a Temporal outage is still taken (ms, at least 10 s). Default 1 day. */
  catchupWindow?: number;
  /** How far back the compensation scan fills windows that never fired (ms). Default 7 days. */
  fillLookback?: number;
  /** The job's input for a window (validated by the type's `input` schema). Default `{ windowStart, windowEnd }`. */
  input?: (window: ScheduleWindow) => I;
}

/** A checked schedule: what `services/schedules.ts` turns into a Temporal Schedule and the scan reads. */
export interface JobSchedule<I = unknown> {
  timing: ScheduleTiming;
  windowMs: number;
  windowOffsetMs: number;
  perTenant: boolean;
  tenant: string | null;
  catchupWindowMs: number;
  fillLookbackMs: number;
  input(window: ScheduleWindow): I;
}

/** A verified event as a route sees it. */
export interface InboundEvent {
  /** The `webhook-id` header: the delivery's identity at its source. */
  webhookId: string;
  /** The source it came in on (`POST /v1/webhooks/{source}`). */
  source: string;
  /** The tenant the source is bound to (`WEBHOOK_SECRETS` `source@tenant=...`), or null: a source of no one tenant. */
  tenantId: string | null;
  type: string;
  data: Record<string, unknown>;
}

/** Which job a signal is for: the one whose effect `step` created the provider's object, or the one started with this key. */
export type SignalTarget<E extends string = string> = { step: E; providerId: string } | { idempotencyKey: string };

/**
 * What a route decides for an event:
 * - `start`: a job of this type with this input, under this idempotency key (a redelivery or a
 *   second event for the same business intent finds the same job);
 * - `signal`: send the signal `name` with `arg` to the running job `job`;
 * - `invalid`: the event does not carry what the type needs (400, nothing recorded);
 * - undefined: nothing to do (recorded as `ignored`).
 * `tenantId` may be given only by a source bound to no tenant; a bound source's events always
 * belong to its tenant, and a route naming another is refused.
 */
export type WebhookRoute<I = unknown, E extends string = string> =
  | { start: { input: I; idempotencyKey: string; tenantId?: string } }
  | { signal: { name: string; arg: unknown; job: SignalTarget<E>; tenantId?: string } }
  | { invalid: string };

export interface WebhookTriggerOptions<I, E extends string> {
  /** The source name (`POST /v1/webhooks/{source}`, a key of `WEBHOOK_SECRETS`). Lower-case letters, digits, `_` and `-`. */
  source: string;
  /** The event types (`type` of the body) this type routes. */
  events: readonly string[];
  route(event: InboundEvent): WebhookRoute<I, E> | undefined;
}

export interface JobWebhook<I = unknown, E extends string = string> {
  source: string;
  events: readonly string[];
  route(event: InboundEvent): WebhookRoute<I, E> | undefined;
}

export const SOURCE_NAME = /^[a-z0-9_-]{1,64}$/;
const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SECOND = 1_000;
const DAY = 24 * 3_600 * SECOND;

// Exported, so the workflow sandbox freezes them with the module (test/unit/workflow-modules.test.ts).
export const CRON_MACROS: readonly string[] = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];
export const CRON_MONTHS: readonly string[] = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
export const CRON_DAYS: readonly string[] = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
/** The five fields of a cron expression and their ranges (day of week 7 is Sunday, as 0). */
export const CRON_FIELDS: ReadonlyArray<{ name: string; min: number; max: number; names?: readonly string[] }> = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: CRON_MONTHS },
  { name: 'day of week', min: 0, max: 7, names: CRON_DAYS },
];

function cronValue(text: string, f: (typeof CRON_FIELDS)[number]): number | undefined {
  const named = f.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return f.names === CRON_MONTHS ? named + 1 : named;
  if (!/^\d{1,2}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= f.min && n <= f.max ? n : undefined;
}

/** Why one field of a 5-field cron expression is wrong, or undefined. */
function cronFieldError(field: string, f: (typeof CRON_FIELDS)[number]): string | undefined {
  for (const item of field.split(',')) {
    const [range, step, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range === '') return `${f.name} "${field}" is not a value, range, list or step`;
    if (step !== undefined && !/^[1-9]\d{0,1}$/.test(step)) return `${f.name} "${field}" has a step that is not a positive number`;
    if (range === '*') continue;
    const [lo, hi, more] = range.split('-');
    const a = cronValue(lo ?? '', f);
    const b = hi === undefined ? a : cronValue(hi, f);
    if (more !== undefined || a === undefined || b === undefined)
      return `${f.name} "${field}" must use values ${f.min}-${f.max}${f.names ? ' or names' : ''}`;
    if (b < a) return `${f.name} "${field}" has a range that ends before it starts`;
  }
  return undefined;
}

/** Why a cron expression is not one Temporal takes (5 fields or a macro), or undefined. */
export function cronError(expr: string): string | undefined {
  const t = expr.trim();
  if (t.startsWith('@')) return CRON_MACROS.includes(t) ? undefined : `"${t}" is not one of ${CRON_MACROS.join(', ')}`;
  const fields = t.split(/\s+/);
  if (fields.length !== 5) return `"${t}" must have 5 fields (minute hour day-of-month month day-of-week), has ${fields.length}`;
  for (let i = 0; i < 5; i++) {
    const e = cronFieldError(fields[i]!, CRON_FIELDS[i]!);
    if (e) return `"${t}": ${e}`;
  }
  return undefined;
}

function wholeSeconds(job: string, field: string, ms: unknown, min = 0): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < min || ms % SECOND !== 0)
    throw new Error(
      `job type ${job}: schedule.${field} must be a whole number of seconds in milliseconds, at least ${min}; got ${String(ms)}`,
    );
  return ms;
}

const defaultInput = (w: ScheduleWindow) => ({ windowStart: w.start, windowEnd: w.end });

/** Checks a `schedule` and fills its defaults; throws an error naming the job type and the field. */
export function resolveSchedule<I>(job: string, s: ScheduleTriggerOptions<I>): JobSchedule<I> {
  if ((s.cron === undefined) === (s.every === undefined)) throw new Error(`job type ${job}: schedule needs exactly one of cron and every`);
  let timing: ScheduleTiming;
  let grid: { length: number; offset?: number } | undefined = s.window;
  if (s.cron !== undefined) {
    const list = typeof s.cron === 'string' ? [s.cron] : [...s.cron];
    if (list.length === 0) throw new Error(`job type ${job}: schedule.cron is empty`);
    for (const c of list) {
      const e = typeof c === 'string' ? cronError(c) : 'is not a string';
      if (e) throw new Error(`job type ${job}: schedule.cron ${e}`);
    }
    if (s.timezone !== undefined && !/^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(s.timezone))
      throw new Error(`job type ${job}: schedule.timezone "${s.timezone}" is not an IANA time zone name`);
    if (!grid) throw new Error(`job type ${job}: a cron schedule needs window.length (the span one firing stands for)`);
    timing = { cron: list.map((c) => c.trim()), timezone: s.timezone ?? 'UTC' };
  } else {
    const every = wholeSeconds(job, 'every', s.every, SECOND);
    const offset = wholeSeconds(job, 'offset', s.offset ?? 0);
    timing = { every, offset };
    grid ??= { length: every, offset };
  }
  const windowMs = wholeSeconds(job, 'window.length', grid.length, SECOND);
  const windowOffsetMs = wholeSeconds(job, 'window.offset', grid.offset ?? 0);
  const perTenant = s.perTenant ?? true;
  if (perTenant && s.tenant !== undefined) throw new Error(`job type ${job}: schedule.tenant is only for perTenant: false`);
  if (!perTenant && (s.tenant === undefined || !TENANT_ID.test(s.tenant)))
    throw new Error(`job type ${job}: a schedule with perTenant: false needs tenant (the tenant whose job each window is)`);
  return {
    timing,
    windowMs,
    windowOffsetMs,
    perTenant,
    tenant: perTenant ? null : s.tenant!,
    catchupWindowMs: wholeSeconds(job, 'catchupWindow', s.catchupWindow ?? DAY, 10 * SECOND),
    fillLookbackMs: wholeSeconds(job, 'fillLookback', s.fillLookback ?? 7 * DAY, SECOND),
    input: s.input ?? (defaultInput as unknown as (w: ScheduleWindow) => I),
  };
}

/** Checks a `webhook`; throws an error naming the job type and the field. */
export function resolveWebhook<I, E extends string>(job: string, w: WebhookTriggerOptions<I, E>): JobWebhook<I, E> {
  if (typeof w.source !== 'string' || !SOURCE_NAME.test(w.source))
    throw new Error(`job type ${job}: webhook.source "${String(w.source)}" must be 1-64 lower-case letters, digits, '_' and '-'`);
  if (!Array.isArray(w.events) || w.events.length === 0)
    throw new Error(`job type ${job}: webhook.events must name at least one event type`);
  for (const e of w.events) {
    if (typeof e !== 'string' || e.length === 0 || e.length > 200)
      throw new Error(`job type ${job}: webhook.events entries must be event types of 1-200 characters`);
  }
  if (typeof w.route !== 'function') throw new Error(`job type ${job}: webhook.route must be a function`);
  return { source: w.source, events: [...w.events], route: w.route };
}
