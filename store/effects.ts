import type pg from 'pg';
import { fenceParams, notSuperseded, type AttemptFence } from './fence.js';

type Db = pg.Pool | pg.PoolClient;

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
 */
export async function beginEffect(db: Db, e: { effectKey: string; jobId: string; tenantId: string; step: string; requestHash: string }, fence?: AttemptFence): Promise<EffectRow | undefined> {
  // The CTE reads the row as it was before this statement: we need the old `in_doubt`
  // while setting it again for the call this attempt is about to make.
  const r = await db.query<EffectRow>(
    `WITH before AS (SELECT in_doubt FROM effects WHERE effect_key = $1)
     INSERT INTO effects (effect_key, job_id, tenant_id, step, request_hash, attempts)
     VALUES ($1, $2, $3, $4, $5, 1)
     ON CONFLICT (effect_key) DO UPDATE
        SET attempts = effects.attempts + 1, last_attempt_at = now(), updated_at = now(),
            in_doubt = effects.state = 'pending'
      WHERE ${notSuperseded(6)}
     RETURNING *, (xmax = 0) AS inserted, coalesce((SELECT in_doubt FROM before), false) AS was_in_doubt`,
    [e.effectKey, e.jobId, e.tenantId, e.step, e.requestHash, ...fenceParams(fence)],
  );
  // No row: a newer attempt of this activity has started; this one must not claim the effect.
  return r.rows[0];
}

export async function countReconciliation(db: Db, effectKey: string, fence?: AttemptFence): Promise<void> {
  await db.query(`UPDATE effects SET reconciliations = reconciliations + 1 WHERE effect_key = $1 AND ${notSuperseded(2)}`, [effectKey, ...fenceParams(fence)]);
}

/** Stored as soon as the response arrives, before anything else happens. */
export async function recordEffectSuccess(db: Db, effectKey: string, providerRequestId: string | null, providerId: string | null, result: unknown, fence?: AttemptFence): Promise<boolean> {
  const r = await db.query(
    `UPDATE effects SET state = 'succeeded', in_doubt = false, provider_request_id = coalesce($2, provider_request_id),
            provider_id = coalesce($3, provider_id), result = $4, updated_at = now()
      WHERE effect_key = $1 AND ${notSuperseded(5)}`,
    [effectKey, providerRequestId, providerId, JSON.stringify(result), ...fenceParams(fence)],
  );
  return r.rowCount === 1;
}

/** A definite refusal (429, 4xx): the upstream did not apply the effect. */
export async function clearDoubt(db: Db, effectKey: string, fence?: AttemptFence): Promise<void> {
  await db.query(`UPDATE effects SET in_doubt = false, updated_at = now() WHERE effect_key = $1 AND state = 'pending' AND ${notSuperseded(2)}`, [effectKey, ...fenceParams(fence)]);
}

export async function recordEffectFailure(db: Db, effectKey: string, providerRequestId: string | null, fence?: AttemptFence): Promise<void> {
  await db.query(
    `UPDATE effects SET state = 'failed', in_doubt = false, provider_request_id = coalesce($2, provider_request_id), updated_at = now()
      WHERE effect_key = $1 AND state = 'pending' AND ${notSuperseded(3)}`,
    [effectKey, providerRequestId, ...fenceParams(fence)],
  );
}

export async function effectsForJob(db: Db, jobId: string): Promise<EffectRow[]> {
  const r = await db.query<EffectRow>('SELECT *, false AS inserted, in_doubt AS was_in_doubt FROM effects WHERE job_id = $1 ORDER BY first_attempt_at', [jobId]);
  return r.rows;
}
