import { fenceParams, notSuperseded, type AttemptFence } from './fence.js';
import type { Db } from '../lib/db.js';
import { recordAttemptCte, recordAttemptParams, type AttemptRecord } from './attempts.js';
import { acquireSlotCtes, acquireSlotParams, ensureSlotRows, releaseSlotCte, slotScopes, type SlotRequest } from './concurrency.js';
import { deleteExpired } from './live-jobs.js';

export interface EffectRow {
  effect_key: string;
  job_id: string;
  step: string;
  state: 'pending' | 'succeeded' | 'failed';
  request_hash: string;
  provider_request_id: string | null;
  provider_id: string | null;
  result: unknown;
  attempts: number;
  reconciliations: number;
  /** Which upstream it was (or may have been) sent to (migration 0007). */
  upstream: 'primary' | 'fallback';
  inserted: boolean;
  /** Whether a previous attempt may have reached the upstream unseen (before this claim). */
  was_in_doubt: boolean;
}

/**
 * Claims the effect for this attempt: the first attempt inserts it `pending`; later ones
 * (retries, redeliveries after a crash, replays) find the existing row and learn whether a
 * previous attempt may already have reached the upstream. The unique key makes a second
 * row impossible.
 *
 * With `claim`, the same statement also does what the call needs when the effect is to be
 * sent afresh (new, or not in doubt, or a refused one a replay sends again): it records the
 * upstream chosen for such an effect on the effect and on the job (activities/fallback.ts),
 * and takes the concurrency slot (for a new or not-in-doubt pending effect). One round trip
 * and one commit, where a transaction of four statements and BEGIN/COMMIT was. An effect in
 * doubt gets neither here: its upstream is where it was sent (the caller decides), and a
 * reconciliation may end without a call.
 */
export async function beginEffect(
  db: Db,
  e: { effectKey: string; jobId: string; tenantId: string; step: string; requestHash: string },
  fence?: AttemptFence,
  claim: EffectClaim = {},
): Promise<ClaimedEffectRow | undefined> {
  const slot = claim.slot;
  if (slot) await ensureSlotRows(db, slot);
  const scopes = slot ? slotScopes(slot).length : 0;
  const up = claim.upstream;
  // The CTE reads the row as it was before this statement: we need the old `in_doubt`
  // while setting it again for the call this attempt is about to make.
  const r = await db.query<ClaimedEffectRow>({
    name: `begin-effect-${scopes}`,
    text: `WITH before AS (SELECT in_doubt FROM effects WHERE effect_key = $1),
     claimed AS (
       INSERT INTO effects (effect_key, job_id, tenant_id, step, request_hash, attempts, upstream)
       VALUES ($1, $2, $3, $4, $5, 1, coalesce($10::text, 'primary'))
       ON CONFLICT (effect_key) DO UPDATE
          SET attempts = effects.attempts + 1, last_attempt_at = now(), updated_at = now(),
              in_doubt = effects.state = 'pending',
              upstream = CASE WHEN $10::text IS NOT NULL
                                   AND ((effects.state = 'pending' AND NOT effects.in_doubt) OR (effects.state = 'failed' AND $12::bool))
                              THEN $10::text ELSE effects.upstream END
        WHERE ${notSuperseded(6)}
       RETURNING *, (xmax = 0) AS inserted, coalesce((SELECT in_doubt FROM before), false) AS was_in_doubt),
     afresh AS (SELECT 1 FROM claimed WHERE (state = 'pending' AND (inserted OR NOT was_in_doubt)) OR (state = 'failed' AND $12::bool)),
     job_upstream AS (
       UPDATE job_intents SET upstream = $10::text, upstream_reason = $11::text, updated_at = now()
        WHERE job_id = $13 AND $10::text IS NOT NULL AND EXISTS (SELECT 1 FROM afresh)
          AND upstream IS DISTINCT FROM 'fallback'
          AND (upstream IS DISTINCT FROM $10::text OR upstream_reason IS DISTINCT FROM $11::text))${
            slot
              ? `,
     ${acquireSlotCtes(14, scopes, `EXISTS (SELECT 1 FROM claimed WHERE state = 'pending' AND (inserted OR NOT was_in_doubt))`)}`
              : ''
          }
     SELECT claimed.*, ${slot ? '(SELECT id::text FROM slot_lease)' : 'NULL::text'} AS slot_id FROM claimed`,
    values: [
      e.effectKey,
      e.jobId,
      e.tenantId,
      e.step,
      e.requestHash,
      ...fenceParams(fence),
      up?.upstream ?? null,
      up?.reason ?? null,
      claim.replay ?? false,
      claim.jobId ?? e.jobId,
      ...(slot ? acquireSlotParams(slot) : []),
    ],
  });
  // No row: a newer attempt of this activity has started; this one must not claim the effect.
  return r.rows[0];
}

/** What `beginEffect` also does for an effect sent afresh. */
export interface EffectClaim {
  /** The upstream for an effect sent afresh, and the job's reason (undefined: the type declares no fallback; nothing recorded). */
  upstream?: { upstream: Upstream; reason: string | null };
  /** A replay: a refused effect is sent again. */
  replay?: boolean;
  /** The job whose upstream is recorded (a replay job's own ID; the effect belongs to the original). Default `e.jobId`. */
  jobId?: string;
  /** The concurrency slot to take. */
  slot?: SlotRequest;
}

export interface ClaimedEffectRow extends EffectRow {
  /** The slot taken, or null (none asked for, none free, or the effect is not sent afresh). */
  slot_id: string | null;
}

export async function countReconciliation(db: Db, effectKey: string, fence?: AttemptFence): Promise<void> {
  await db.query(`UPDATE effects SET reconciliations = reconciliations + 1 WHERE effect_key = $1 AND ${notSuperseded(2)}`, [
    effectKey,
    ...fenceParams(fence),
  ]);
}

/** What an effect's success writes: the provider's IDs and response, and with them the attempt's row and the slot's release. */
export interface EffectSuccess {
  effectKey: string;
  providerRequestId: string | null;
  providerId: string | null;
  result: unknown;
  fence?: AttemptFence | undefined;
  attempt?: AttemptRecord | undefined;
  releaseSlotId?: string | null | undefined;
}

/**
 * An effect's success as CTEs of a statement: the effect row (fenced, `effect_stored` returns it
 * when it changed), the attempt's row and the slot's release. The last two are written whether
 * or not the fence lets the effect row change: the attempt happened, the slot is free. Carried by
 * `recordEffectSuccess` alone, or by the step's result statement (store/step-result.ts
 * `writeResultFenced`), whose fence refusal does not touch them. Parameters `$i..$i+17`
 * (`effectSuccessParams`); all NULL writes nothing.
 */
export function effectSuccessCtes(i: number): string {
  return `${recordAttemptCte(i + 8, undefined, 'effect_attempt_row')},
           ${releaseSlotCte(i + 17, 'effect_slot')},
           effect_stored AS (
             UPDATE effects SET state = 'succeeded', in_doubt = false, provider_request_id = coalesce($${i + 1}::text, provider_request_id),
                    provider_id = coalesce($${i + 2}::text, provider_id), result = $${i + 3}::jsonb, updated_at = now()
              WHERE effect_key = $${i}::text AND ${notSuperseded(i + 4)}
             RETURNING 1)`;
}

export function effectSuccessParams(e: EffectSuccess | undefined): unknown[] {
  return [
    e?.effectKey ?? null,
    e?.providerRequestId ?? null,
    e?.providerId ?? null,
    e ? JSON.stringify(e.result) : null,
    ...fenceParams(e?.fence),
    ...recordAttemptParams(e?.attempt),
    e?.releaseSlotId ?? null,
  ];
}

/**
 * Stored as soon as the response arrives, before anything else happens (or in the step's
 * result statement: `ctx.effect(..., { storeWithResult: true })`). With `also`: the attempt's
 * row and the slot's release in the same statement (one round trip, one commit). Returns
 * whether the fence let the effect row change.
 */
export async function recordEffectSuccess(
  db: Db,
  effectKey: string,
  providerRequestId: string | null,
  providerId: string | null,
  result: unknown,
  fence?: AttemptFence,
  also: { attempt?: AttemptRecord | undefined; releaseSlotId?: string | null | undefined } = {},
): Promise<boolean> {
  return (await storeEffectSuccess(db, { effectKey, providerRequestId, providerId, result, fence, ...also })).stored;
}

/** `recordEffectSuccess`, also returning the waiting job its freed slot wakes (store/concurrency.ts `releaseSlotCte`). */
export async function storeEffectSuccess(db: Db, e: EffectSuccess): Promise<{ stored: boolean; woken: string | null }> {
  const r = await db.query<{ stored: boolean; woken: string | null }>({
    name: 'record-effect-success',
    text: `WITH ${effectSuccessCtes(1)} SELECT EXISTS (SELECT 1 FROM effect_stored) AS stored, (SELECT job_id FROM effect_slot_woken) AS woken`,
    values: effectSuccessParams(e),
  });
  return r.rows[0]!;
}

/**
 * A claim taken back because no concurrency slot was free (nothing was sent). A row that this
 * very claim created goes again, so a job that waits for a slot shows no effect until one is
 * sent: no claim counted, no `first_attempt_at` before the job first ran, no "pending" row
 * that reads as a refusal. A row that existed before only has its doubt cleared: its
 * `attempts` is a fence (`markEffectNotApplied`) and never goes back.
 */
export async function withdrawClaim(db: Db, effectKey: string, created: boolean, fence?: AttemptFence): Promise<void> {
  if (!created) return clearDoubt(db, effectKey, fence);
  await db.query(
    `WITH gone AS (DELETE FROM effects WHERE effect_key = $1 AND state = 'pending' AND attempts = 1 AND ${notSuperseded(2)} RETURNING 1)
     UPDATE effects SET in_doubt = false, updated_at = now()
      WHERE effect_key = $1 AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM gone) AND ${notSuperseded(2)}`,
    [effectKey, ...fenceParams(fence)],
  );
}

/** A definite refusal (429, 4xx): the upstream did not apply the effect (and `withdrawClaim` on a row older than its claim). */
export async function clearDoubt(db: Db, effectKey: string, fence?: AttemptFence): Promise<void> {
  await db.query(
    `UPDATE effects SET in_doubt = false, updated_at = now() WHERE effect_key = $1 AND state = 'pending' AND ${notSuperseded(2)}`,
    [effectKey, ...fenceParams(fence)],
  );
}

export async function recordEffectFailure(
  db: Db,
  effectKey: string,
  providerRequestId: string | null,
  fence?: AttemptFence,
): Promise<void> {
  await db.query(
    `UPDATE effects SET state = 'failed', in_doubt = false, provider_request_id = coalesce($2, provider_request_id), updated_at = now()
      WHERE effect_key = $1 AND state = 'pending' AND ${notSuperseded(3)}`,
    [effectKey, providerRequestId, ...fenceParams(fence)],
  );
}

export async function effectsForJob(db: Db, jobId: string): Promise<EffectRow[]> {
  const r = await db.query<EffectRow>(
    'SELECT *, false AS inserted, in_doubt AS was_in_doubt FROM effects WHERE job_id = $1 ORDER BY first_attempt_at',
    [jobId],
  );
  return r.rows;
}

export type Upstream = 'primary' | 'fallback';

/**
 * Records which upstream this attempt is about to call, before the call: a crash during it
 * leaves the effect in doubt at that upstream. A succeeded effect keeps its record.
 */
export async function setEffectUpstream(db: Db, effectKey: string, upstream: Upstream): Promise<void> {
  await db.query(`UPDATE effects SET upstream = $2 WHERE effect_key = $1 AND state <> 'succeeded'`, [effectKey, upstream]);
}

/**
 * A replay may run a permanently failed effect again (the operator fixed its cause):
 * back to pending, and not in doubt, since the upstream refused it definitely.
 */
export async function reopenFailedEffect(db: Db, effectKey: string): Promise<void> {
  await db.query(`UPDATE effects SET state = 'pending', in_doubt = false, updated_at = now() WHERE effect_key = $1 AND state = 'failed'`, [
    effectKey,
  ]);
}

/** Provider request IDs the job's effects stored (the scope is the original job for replays). */
export async function effectRequestIds(db: Db, effectScope: string): Promise<ProviderRequestRef[]> {
  const r = await db.query<ProviderRequestRef>(
    `SELECT step, provider_request_id AS "requestId", state AS outcome FROM effects
      WHERE job_id = $1 AND provider_request_id IS NOT NULL ORDER BY first_attempt_at`,
    [effectScope],
  );
  return r.rows;
}

export interface InDoubtEffect {
  effect_key: string;
  job_id: string;
  tenant_id: string;
  step: string;
  attempts: number;
  last_attempt_at: Date;
}

/**
 * Effects still `pending` and in doubt whose last attempt is older than the lease: no
 * attempt holds them, and one may have reached the upstream without us seeing the answer.
 */
export async function listInDoubtEffects(db: Db, lastAttemptBefore: Date, limit: number): Promise<InDoubtEffect[]> {
  const r = await db.query<InDoubtEffect>(
    `SELECT effect_key, job_id, tenant_id, step, attempts, last_attempt_at FROM effects
      WHERE state = 'pending' AND in_doubt AND last_attempt_at < $1
      ORDER BY last_attempt_at LIMIT $2`,
    [lastAttemptBefore, limit],
  );
  return r.rows;
}

/**
 * The upstream has no record of the key: the effect was not applied. Fenced on the attempt
 * count (every claim increments it), so an attempt that began after the scan read the row
 * (and may be calling the upstream right now) keeps its doubt.
 */
export async function markEffectNotApplied(db: Db, effectKey: string, attempts: number): Promise<boolean> {
  const r = await db.query(
    `UPDATE effects SET in_doubt = false, reconciliations = reconciliations + 1, updated_at = now()
      WHERE effect_key = $1 AND state = 'pending' AND in_doubt AND attempts = $2`,
    [effectKey, attempts],
  );
  return r.rowCount === 1;
}

/**
 * The upstream holds a completed response for the key: record it as the effect's success
 * (as `recordEffectSuccess` would) and count the reconciliation. Only a still-pending row
 * changes, so two scans at once record and count it once.
 */
export async function recordReconciledSuccess(
  db: Db,
  effectKey: string,
  providerRequestId: string | null,
  providerId: string | null,
  result: unknown,
): Promise<boolean> {
  const r = await db.query(
    `UPDATE effects SET state = 'succeeded', in_doubt = false, provider_request_id = coalesce($2, provider_request_id),
            provider_id = coalesce($3, provider_id), result = $4, reconciliations = reconciliations + 1, updated_at = now()
      WHERE effect_key = $1 AND state = 'pending'`,
    [effectKey, providerRequestId, providerId, JSON.stringify(result)],
  );
  return r.rowCount === 1;
}

export interface ProviderRequestRef {
  step: string;
  requestId: string;
  outcome: 'succeeded' | 'failed' | 'pending';
}

// ---- retention ----

/** One batch of the retention cleanup: effects not touched for `days` of jobs that are not live. */
export function deleteExpiredEffects(db: Db, days: number, limit: number): Promise<number> {
  return deleteExpired(db, { table: 'effects', age: 'updated_at', job: 'job_id' }, days, limit);
}

/**
 * Every effect of these (expired, finished) jobs: deleted with their intent, so a later
 * submission with the same key (the same job ID, hence the same effect keys) finds none.
 */
export async function deleteEffectsOfJobs(db: Db, jobIds: string[]): Promise<number> {
  const r = await db.query('DELETE FROM effects WHERE job_id = ANY($1::text[])', [jobIds]);
  return r.rowCount ?? 0;
}
