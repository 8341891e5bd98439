import type pg from 'pg';
import { PRIORITIES, type Priority } from '../contract/job-types.js';
import type { Logger } from '../lib/logger.js';
import { getSetting, insertAudit, lockSetting, rampAttempts, writeSetting, type RampStop } from '../store/degradation.js';

/**
 * Who the setting says paused a priority when the stop condition did: never an operator's name
 * (operator names have no spaces or parentheses, lib/config.ts), so a reader can tell the two apart.
 */
export const RAMP_STOP_ACTOR = 'system (ramp stop condition)';

/** The audit's key ID for changes the system made itself (no admin key involved). */
const SYSTEM_KEY_ID = 'ramp-stop';

/**
 * The ramp's stop condition, checked at each ramped admission (under the admission lock):
 * if the upstream degrades again while the ramp runs, the priority is paused once more, in the
 * same transaction as its audit row, instead of feeding more work to a failing upstream. An
 * operator resumes it (after a look at the upstream) like any pause. Returns the reason when
 * this call (or an earlier one) paused the priority; undefined to go on admitting. The paused
 * check is repeated here, under the admission lock: a job that read the setting before the
 * halt is not admitted after it.
 */
export async function haltRampIfFailing(tx: pg.PoolClient, priority: Priority, stop: RampStop, log: Logger): Promise<string | undefined> {
  const pausedAgain = `${priority}-priority work was paused again while resuming`;
  if ((await getSetting(tx)).pausedPriorities.includes(priority)) return pausedAgain;
  const f = await rampAttempts(tx, stop.windowSeconds);
  if (f.attempts < stop.minAttempts || f.failures < stop.failureRatio * f.attempts) return undefined;
  const { now: _txStart, ...before } = await lockSetting(tx);
  if (before.pausedPriorities.includes(priority)) return pausedAgain;
  const now = f.now;
  const pct = (n: number) => `${Math.round(n * 100)}%`;
  const reason =
    `ramp stop condition: ${f.failures} of ${f.attempts} upstream attempts of ramped jobs failed in the last ` +
    `${stop.windowSeconds} s (${pct(f.failures / f.attempts)}, threshold ${pct(stop.failureRatio)}); ${priority} paused again`;
  const priorities = [...new Set([...before.pausedPriorities, priority])];
  const after = await writeSetting(tx, {
    ...before,
    pausedPriorities: PRIORITIES.filter((p) => priorities.includes(p)),
    pausedSince: { ...before.pausedSince, [priority]: now.toISOString() },
    updatedBy: RAMP_STOP_ACTOR,
    rampHalted: {
      at: now.toISOString(),
      priorities: [...new Set([...(before.rampHalted?.priorities ?? []), priority])],
      attempts: f.attempts,
      failures: f.failures,
      reason,
    },
  });
  await insertAudit(tx, { actor: 'system', keyId: SYSTEM_KEY_ID, remoteAddr: null, reason, before, after });
  log.warn({ priority, attempts: f.attempts, failures: f.failures }, 'ramp halted by its stop condition');
  return reason;
}
