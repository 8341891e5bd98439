import type pg from 'pg';
import { withTransaction } from '../lib/db.js';
import { admissionWaitMs } from '../lib/health.js';
import type { Logger } from '../lib/logger.js';
import { holdingScope, type DegradationSetting, type PauseScope, type RampStop } from '../store/degradation.js';
import {
  admissionFacts,
  admittedLastMinute,
  findReservation,
  lockAdmissions,
  markSlotAdmitted,
  reserveSlot,
  type Reservation,
} from '../store/admissions.js';
import { markAdmitted, markDeferred } from '../store/intents.js';
import type { JobArgs, Priority } from '../contract/job-types.js';
import { haltRampIfFailing, RAMP_STOP_ACTOR } from './ramp-stop.js';

export interface AdmissionDeps {
  pool: pg.Pool;
  log: Logger;
}

export type AdmissionDecision =
  | { decision: 'admit' }
  /** The job's priority is paused: poll again later (or on the `degradationChanged` signal). */
  | { decision: 'defer'; reason: string }
  /** Resuming: come back after `waitMs` (the job's ramp slot, or the per-minute cap). */
  | { decision: 'wait'; waitMs: number; reason: string };

/** The gate's round: a new round after every paused re-check, so a reservation from before a new pause is not reused. */
export type AdmissionArgs = JobArgs & { round: number };

const FINAL = ['succeeded', 'dead_lettered', 'cancelled'];

/**
 * The reason a deferred job shows its tenant (`statusReason`). It says who paused only as a
 * role, never the operator's name (which may be an e-mail address): who did it is for the
 * audit trail and the console (`degradation_audit`, the timeline's events), not for tenants.
 */
function pausedReason(priority: Priority, setting: DegradationSetting, rate: number): string {
  const since = setting.pausedSince[priority];
  const by = setting.updatedBy === RAMP_STOP_ACTOR ? 'automatically by the ramp stop condition' : 'by an operator';
  return `${priority}-priority work is paused ${by}${since ? ` since ${since}` : ''}; it resumes at ${rate}/min once the pause is lifted`;
}

/** The reason a job held by a scope pause shows its tenant (`statusReason`): what is paused, never by whom. */
export function scopeReason(p: PauseScope, rate: number): string {
  const what =
    p.tenantId !== undefined && p.jobType !== undefined
      ? `this tenant's ${p.jobType} jobs are`
      : p.jobType !== undefined
        ? `${p.jobType} jobs are`
        : "this tenant's jobs are";
  return `${what} paused by an operator since ${p.since}; they resume at ${rate}/min once the pause is lifted`;
}

/**
 * The degradation gate's activity. A job is admitted at once unless its priority is paused
 * (then `deferred`, with the reason and since when) or it is resuming from a deferral (or
 * other jobs of its priority still are): then it takes an evenly spaced slot in the
 * admission ledger and, at that slot, passes a hard per-minute cap. Both steps run under one
 * advisory lock, so the rate holds across every worker process.
 */
export function createAdmissionActivities(deps: AdmissionDeps) {
  async function reserve(args: AdmissionArgs, rate: number): Promise<Reservation> {
    return withTransaction(deps.pool, async (tx) => {
      await lockAdmissions(tx);
      return (await reserveSlot(tx, args.jobId, args.round, args.priority, rate)) ?? (await findReservation(tx, args.jobId, args.round))!;
    });
  }

  /**
   * At the slot: admit if fewer than `rate` were admitted in the last minute, else say how long
   * to wait; or, when the ramp's stop condition holds, pause the priority again (its reason).
   */
  async function confirm(args: AdmissionArgs, rate: number, stop: RampStop): Promise<number | { halted: string }> {
    return withTransaction(deps.pool, async (tx) => {
      await lockAdmissions(tx);
      const halted = await haltRampIfFailing(tx, args.priority, stop, deps.log);
      if (halted) return { halted };
      const { times, now } = await admittedLastMinute(tx);
      const waitMs = admissionWaitMs(
        now.getTime(),
        times.map((t) => t.getTime()),
        rate,
      );
      if (waitMs === 0) {
        await markSlotAdmitted(tx, args.jobId, args.round);
        await markAdmitted(tx, args.jobId);
      }
      return waitMs;
    });
  }

  return {
    async checkAdmission(args: AdmissionArgs): Promise<AdmissionDecision> {
      // One read for the common case (admitted at once): status, setting, reservation, others deferred.
      const facts = await admissionFacts(deps.pool, args.jobId, args.round, args.priority);
      // The intake commits the intent before the workflow start; only the delete-and-reinsert
      // race (services/start-marks.ts writes the row again) can leave a started workflow without it briefly.
      if (!facts.status) throw new Error('job intent not visible yet; retrying');
      if (FINAL.includes(facts.status)) return { decision: 'admit' };
      const setting = facts.setting;
      const rate = setting.recoveryRatePerMinute;
      if (setting.pausedPriorities.includes(args.priority)) {
        const reason = pausedReason(args.priority, setting, rate);
        await markDeferred(deps.pool, args.jobId, reason);
        return { decision: 'defer', reason };
      }
      const scope = holdingScope(setting.pausedScopes, args);
      if (scope) {
        const reason = scopeReason(scope, rate);
        await markDeferred(deps.pool, args.jobId, reason);
        return { decision: 'defer', reason };
      }
      let res = facts.reservation;
      if (!res) {
        const resuming = args.round > 0 || facts.status === 'deferred' || facts.othersDeferred;
        if (!resuming) return { decision: 'admit' };
        res = await reserve(args, rate);
      }
      if (res.admitted_at) {
        await markAdmitted(deps.pool, args.jobId);
        return { decision: 'admit' };
      }
      const untilSlot = res.slot_at.getTime() - res.now.getTime();
      if (untilSlot > 0) {
        const reason = `resuming after a pause at ${rate}/min; admission slot at ${res.slot_at.toISOString()}`;
        await markDeferred(deps.pool, args.jobId, reason);
        return { decision: 'wait', waitMs: untilSlot, reason };
      }
      const waitMs = await confirm(args, rate, setting.rampStop);
      if (typeof waitMs === 'object') {
        await markDeferred(deps.pool, args.jobId, waitMs.halted);
        return { decision: 'defer', reason: waitMs.halted };
      }
      if (waitMs === 0) {
        deps.log.info({ jobId: args.jobId, priority: args.priority }, 'deferred job admitted');
        return { decision: 'admit' };
      }
      const reason = `resuming after a pause at ${rate}/min; this minute's admissions are used up, next try in ${Math.ceil(waitMs / 1000)} s`;
      await markDeferred(deps.pool, args.jobId, reason);
      return { decision: 'wait', waitMs, reason };
    },
  };
}

export type AdmissionActivities = ReturnType<typeof createAdmissionActivities>;
