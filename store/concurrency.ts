import type { Db } from '../lib/db.js';
import { olderThan } from './live-jobs.js';

export interface SlotRequest {
  jobType: string;
  tenantId: string;
  holder: string;
  perTenant: number;
  global: number;
  /** Cap across every job type and tenant (`CONCURRENCY_TOTAL`). Default: none. */
  total?: number;
  ttlMs: number;
}

/** The slot scopes a call needs, each with its cap: its tenant's, its job type's, and (when set) everyone's. */
export function slotScopes(r: SlotRequest): Array<{ scope: string; cap: number }> {
  const scopes = [
    { scope: `type:${r.jobType}:tenant:${r.tenantId}`, cap: r.perTenant },
    { scope: `type:${r.jobType}`, cap: r.global },
  ];
  if (r.total !== undefined) scopes.push({ scope: 'all', cap: r.total });
  return scopes;
}

/**
 * Scopes (with their cap) whose rows this process has created or seen: creating them once per
 * process is enough. Not shared as a promise between concurrent callers: a caller inside a
 * transaction would wait, holding its connection, for one that needs a pool connection, and a
 * pool full of such callers never frees one (a pool checkout timeout under load).
 */
const ensured = new Set<string>();

/** Forgets the scopes this process created (the rows were deleted, e.g. by a test resetting the table). */
export function forgetEnsuredSlots(): void {
  ensured.clear();
}

/** Creates a scope's slot rows up to its cap; the acquisition calls it once per scope and cap. */
export async function ensureSlots(db: Db, scope: string, cap: number): Promise<void> {
  await db.query({
    name: 'ensure-slots',
    text: `INSERT INTO concurrency_slots (scope, n) SELECT $1, g FROM generate_series(1, $2::int) g ON CONFLICT DO NOTHING`,
    values: [scope, cap],
  });
}

/**
 * Takes one free slot in each scope, or none, in one statement. Each scope's free slot is
 * locked with FOR UPDATE SKIP LOCKED: acquirers of the same scope take different rows instead
 * of queueing behind one lock, and nothing serialises different job types or tenants. Only
 * when every scope yielded a slot is the lease inserted and the slots pointed at it; otherwise
 * the statement changes nothing and its row locks end with it (the caller waits and retries;
 * a slot locked by an acquirer that then failed reads as taken for that instant only). A slot
 * whose lease expired (its worker died) is taken over, and that lease row is deleted.
 * Returns the lease ID, or null when a cap is reached.
 */
export async function tryAcquireSlot(db: Db, r: SlotRequest): Promise<string | null> {
  await ensureSlotRows(db, r);
  const scopes = slotScopes(r);
  const res = await db.query<{ id: string }>({
    name: `acquire-slots-${scopes.length}`,
    text: `WITH ${acquireSlotCtes(1, scopes.length)}
           SELECT id::text AS id FROM slot_lease`,
    values: acquireSlotParams(r),
  });
  return res.rows[0]?.id ?? null;
}

/** Creates the slot rows of the request's scopes the first time this process needs them. */
export async function ensureSlotRows(db: Db, r: SlotRequest): Promise<void> {
  for (const s of slotScopes(r)) {
    const key = `${s.scope}\u0000${s.cap}`;
    if (ensured.has(key)) continue;
    await ensureSlots(db, s.scope, s.cap);
    ensured.add(key);
  }
}

/**
 * `tryAcquireSlot`'s statement as CTEs of another (the effect's claim, store/effects.ts), taken
 * only `when` it holds; the lease ID is `SELECT id FROM slot_lease`. Parameters `$i..$i+5`
 * (`acquireSlotParams`); `scopes` is `slotScopes(r).length`. Call `ensureSlotRows` first.
 *
 * The scopes are a VALUES list of `scopes` rows, not `unnest` of the arrays: with `unnest` the
 * planner cannot know a generic plan's row count, so it kept planning these prepared
 * statements afresh on every execution (a custom plan each time, about 0.6 ms of the effect's
 * claim). With the count in the text, it settles on the generic plan after five executions.
 */
export function acquireSlotCtes(i: number, scopes: number, when = 'true'): string {
  const want = Array.from({ length: scopes }, (_, k) => `(($${i}::text[])[${k + 1}], ($${i + 1}::int[])[${k + 1}])`).join(', ');
  return `slot_want AS (SELECT * FROM (VALUES ${want}) AS w(scope, cap)),
                slot_pick AS (
                  SELECT f.* FROM slot_want w, LATERAL (
                    SELECT c.scope, c.n, c.lease_id AS old FROM concurrency_slots c
                     WHERE c.scope = w.scope AND c.n <= w.cap AND (c.lease_id IS NULL OR c.expires_at < now()) AND ${when}
                     ORDER BY c.n LIMIT 1
                       FOR UPDATE SKIP LOCKED) f),
                slot_lease AS (
                  INSERT INTO concurrency_leases (job_type, tenant_id, holder, expires_at, slot_scopes, slot_ns)
                  SELECT $${i + 2}::text, $${i + 3}::text, $${i + 4}::text, now() + $${i + 5}::float8 * interval '1 millisecond',
                         (SELECT array_agg(scope ORDER BY scope) FROM slot_pick), (SELECT array_agg(n ORDER BY scope) FROM slot_pick)
                   WHERE (SELECT count(*) FROM slot_pick) = ${scopes}
                  RETURNING id, expires_at),
                slot_take AS (
                  UPDATE concurrency_slots c SET lease_id = slot_lease.id, expires_at = slot_lease.expires_at FROM slot_lease, slot_pick
                   WHERE c.scope = slot_pick.scope AND c.n = slot_pick.n
                  RETURNING slot_pick.old),
                slot_expired AS (DELETE FROM concurrency_leases d WHERE d.id IN (SELECT old FROM slot_take WHERE old IS NOT NULL))`;
}

export function acquireSlotParams(r: SlotRequest): unknown[] {
  const scopes = slotScopes(r);
  return [scopes.map((s) => s.scope), scopes.map((s) => s.cap), r.jobType, r.tenantId, r.holder, r.ttlMs];
}

/**
 * The slot rows (alias `c`) that the leases of `leases` (a CTE returning `id`, `slot_scopes`,
 * `slot_ns`; alias `l`, which the update's SET may read) name and still hold, found by primary
 * key (schema/0019_hot_slots.sql). A slot taken over meanwhile points at another lease and is
 * left out. The FROM and WHERE of an `UPDATE concurrency_slots c`.
 */
function heldSlotsOf(leases: string): string {
  return `FROM ${leases} l, unnest(l.slot_scopes, l.slot_ns) AS s(scope, n)
          WHERE c.scope = s.scope AND c.n = s.n AND c.lease_id = l.id`;
}

/** Frees the slots the leases of `leases` still hold (`heldSlotsOf`). */
function freeSlotsOf(leases: string): string {
  return `UPDATE concurrency_slots c SET lease_id = NULL, expires_at = NULL ${heldSlotsOf(leases)}`;
}

/**
 * Renews every lease a worker holds, and their slots, in one statement (one commit per tick, not
 * per call). The lease names its slots (schema/0019_hot_slots.sql); a slot taken over meanwhile
 * (its lease had expired) points at another lease and is left alone.
 */
export async function renewSlots(db: Db, ids: string[], ttlMs: number): Promise<void> {
  await db.query({
    name: 'renew-slots',
    text: `WITH leases AS (UPDATE concurrency_leases SET expires_at = now() + $2 * interval '1 millisecond' WHERE id = ANY($1::bigint[])
                            RETURNING id, expires_at, slot_scopes, slot_ns)
           UPDATE concurrency_slots c SET expires_at = l.expires_at ${heldSlotsOf('leases')}`,
    values: [ids, ttlMs],
  });
}

/**
 * `releaseSlot` as CTEs of another statement (the effect's success, store/effects.ts): the
 * slot is freed by the statement that records the call's outcome. Parameter `$i`; NULL frees
 * nothing. `${prefix}_woken` returns the waiter the freed slot wakes (`wokenWaiterCte`).
 */
export function releaseSlotCte(i: number, prefix = 'slot'): string {
  return `${prefix}_lease_gone AS (DELETE FROM concurrency_leases WHERE id = $${i}::bigint RETURNING id, slot_scopes, slot_ns),
           ${prefix}_freed AS (${freeSlotsOf(`${prefix}_lease_gone`)}),
           ${wokenWaiterCte(i, `${prefix}_woken`)}`;
}

/**
 * The job a freed slot wakes: the oldest waiter of the lease's job type and tenant, else of its
 * job type (schema/0018_slot_waiters.sql), taken out of the table in the same statement, so two
 * releases never wake the same waiter. A waiter whose job has finished meanwhile (cancelled, or
 * dead-lettered when its elapsed cap ran out) is passed over (`registerWaiter` clears those). A
 * waiter held back only by the cap across all job types is woken by its own type's releases or
 * by its timer. The lease row is read as it was before the statement deleted it. Returns
 * `job_id`; none when no waiter (the usual case: two index probes).
 */
function wokenWaiterCte(i: number, name: string): string {
  const oldest = (tenant: boolean) =>
    `(SELECT w.job_id FROM slot_waiters w, concurrency_leases l
       WHERE l.id = $${i}::bigint AND w.job_type = l.job_type${tenant ? ' AND w.tenant_id = l.tenant_id' : ''}
         AND EXISTS (SELECT 1 FROM job_intents j WHERE j.job_id = w.job_id AND j.finished_at IS NULL)
       ORDER BY w.since LIMIT 1 FOR UPDATE OF w SKIP LOCKED)`;
  return `${name} AS (DELETE FROM slot_waiters WHERE $${i}::bigint IS NOT NULL AND job_id = coalesce(${oldest(true)}, ${oldest(false)})
                       RETURNING job_id)`;
}

/**
 * Frees the lease and its slots in one statement (when the effect's success did not). Returns
 * the waiting job the freed slot wakes, if any (`wokenWaiterCte`).
 */
export async function releaseSlot(db: Db, id: string): Promise<string | null> {
  const r = await db.query<{ woken: string | null }>({
    name: 'release-slot',
    text: `WITH ${releaseSlotCte(1)} SELECT (SELECT job_id FROM slot_woken) AS woken`,
    values: [id],
  });
  return r.rows[0]?.woken ?? null;
}

/** How many of a type's oldest waiters each registration checks for jobs that finished while waiting. */
const WAITERS_CHECKED = 16;

/**
 * The job waits in its workflow for a slot: the next release of its job type may wake it
 * (`wokenWaiterCte`). A job already registered keeps its place. The same statement clears, among
 * the type's oldest waiters, those whose jobs finished while they waited (or whose rows are
 * gone): the ones a release would otherwise pass over. Only the front of the queue is checked,
 * so a registration costs a bounded number of probes however many jobs wait (each waiting job
 * registers on every round); a finished waiter further back is cleared once it reaches the front.
 */
export async function registerWaiter(db: Db, w: { jobId: string; jobType: string; tenantId: string }): Promise<void> {
  await db.query({
    name: 'register-slot-waiter',
    text: `WITH finished AS (
             DELETE FROM slot_waiters
              WHERE job_id IN (SELECT o.job_id FROM (SELECT job_id FROM slot_waiters WHERE job_type = $2 ORDER BY since LIMIT $4) o
                                WHERE NOT EXISTS (SELECT 1 FROM job_intents j WHERE j.job_id = o.job_id AND j.finished_at IS NULL)))
           INSERT INTO slot_waiters (job_id, job_type, tenant_id) VALUES ($1, $2, $3) ON CONFLICT (job_id) DO NOTHING`,
    values: [w.jobId, w.jobType, w.tenantId, WAITERS_CHECKED],
  });
}

/** The job has its slot (or stopped waiting): no release should wake it any more. */
export async function forgetWaiter(db: Db, jobId: string): Promise<void> {
  await db.query('DELETE FROM slot_waiters WHERE job_id = $1', [jobId]);
}

/**
 * One batch of the retention cleanup: leases that expired more than `days` ago, with the slots
 * still pointing at them. A worker that dies holding a slot leaves its lease behind; the next
 * acquirer of that slot takes it over and deletes the lease, but a slot nobody takes again (a
 * cap lowered below its number, a tenant gone quiet) kept both forever. Deleting an expired
 * lease is what a takeover does: its holder's late release or renewal then finds nothing and
 * touches nothing. A slot taken over meanwhile points at another lease and is left alone.
 */
export async function deleteExpiredSlotLeases(db: Db, days: number, limit: number): Promise<number> {
  const r = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM concurrency_leases WHERE ctid IN (
         SELECT ctid FROM concurrency_leases WHERE ${olderThan('expires_at', 1)} LIMIT $2)
       RETURNING id, slot_scopes, slot_ns),
     freed AS (${freeSlotsOf('gone')})
     SELECT count(*)::int AS n FROM gone`,
    [days, limit],
  );
  return r.rows[0]!.n;
}
