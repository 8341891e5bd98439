import type { Db } from '../lib/db.js';
import { leaseEndedCte, leaseEndedParams, type LeaseKey } from './activity-leases.js';
import { recordAttemptCte, recordAttemptParams, type AttemptRecord } from './attempts.js';
import { effectSuccessCtes, effectSuccessParams, type EffectSuccess } from './effects.js';
import { insertOutboxCte, insertOutboxParams, type NewOutboxRow } from './outbox.js';

/**
 * The step's last statement: the result, fenced by the attempt number (a stale attempt that
 * finishes after a newer one wrote its result changes nothing), in one round trip and one
 * commit with what belongs to it: the outbox row (only if the result landed), the attempt's
 * execution span, its lease's end and, when the write was refused, its `fenced` attempt row
 * (the span and lease rows are evidence either way). It was a transaction of four to six
 * statements. Two sub-statements update the intent (the result with the span, or the span
 * alone when refused), never both: the second runs only if the first changed nothing.
 * On a job that already succeeded (an attempt ran again after its completion was lost, and
 * reused the stored effect) only the fence moves: the result, its first finish time and the
 * notification's state stay as they were. With `effect`, the step's last effect's success
 * too (store/effects.ts `effectSuccessCtes`): its own fence decides it, so a refused result
 * never takes a recorded effect success with it. `landed` is false when the result write was
 * refused; `effectStored` whether the effect row changed (false also when none was given);
 * `woken` the waiting job the effect's freed slot wakes (store/concurrency.ts `releaseSlotCte`).
 */
export async function writeResultFenced(
  db: Db,
  jobId: string,
  fence: number,
  result: unknown,
  notificationState: 'pending' | null,
  also: {
    outbox?: NewOutboxRow;
    /** This attempt's execution span (ms) and start; not added for an attempt that began after the job finished. */
    span?: { ms: number; attemptStartedAt: Date };
    lease?: LeaseKey;
    /** The row recorded if the write is refused. */
    refused?: AttemptRecord;
    effect?: EffectSuccess;
  } = {},
): Promise<{ landed: boolean; effectStored: boolean; woken: string | null }> {
  const spanMs = also.span ? Math.max(0, Math.round(also.span.ms)) : null;
  const r = await db.query<{ landed: boolean; effect_stored: boolean; woken: string | null }>({
    name: 'write-result-fenced',
    text: `WITH written AS (
             UPDATE job_intents
                SET result_fence = $2,
                    result = CASE WHEN status = 'succeeded' THEN result ELSE $3 END,
                    notification_state = CASE WHEN status = 'succeeded' THEN notification_state ELSE $4 END,
                    finished_at = CASE WHEN status = 'succeeded' THEN finished_at ELSE now() END,
                    updated_at = CASE WHEN status = 'succeeded' THEN updated_at ELSE now() END,
                    execution_ms = CASE WHEN $5::int IS NOT NULL AND (finished_at IS NULL OR finished_at >= $6::timestamptz)
                                        THEN coalesce(execution_ms, 0) + $5::int ELSE execution_ms END,
                    status = 'succeeded', status_reason = NULL, next_attempt_at = NULL
              WHERE job_id = $1 AND result_fence < $2 AND status NOT IN ('dead_lettered', 'cancelled')
              RETURNING job_id),
           span_only AS (
             UPDATE job_intents SET execution_ms = coalesce(execution_ms, 0) + $5::int
              WHERE job_id = $1 AND $5::int IS NOT NULL AND (finished_at IS NULL OR finished_at >= $6::timestamptz)
                AND NOT EXISTS (SELECT 1 FROM written)),
           ${insertOutboxCte(7, 'EXISTS (SELECT 1 FROM written)')},
           ${recordAttemptCte(12, 'NOT EXISTS (SELECT 1 FROM written)')},
           ${leaseEndedCte(21)},
           ${effectSuccessCtes(26)}
         SELECT EXISTS (SELECT 1 FROM written) AS landed, EXISTS (SELECT 1 FROM effect_stored) AS effect_stored,
                (SELECT job_id FROM effect_slot_woken) AS woken`,
    values: [
      jobId,
      fence,
      JSON.stringify(result),
      notificationState,
      spanMs,
      also.span?.attemptStartedAt ?? null,
      ...insertOutboxParams(also.outbox),
      ...recordAttemptParams(also.refused),
      ...leaseEndedParams(also.lease, 'completed'),
      ...effectSuccessParams(also.effect),
    ],
  });
  return { landed: r.rows[0]!.landed, effectStored: r.rows[0]!.effect_stored, woken: r.rows[0]!.woken };
}
