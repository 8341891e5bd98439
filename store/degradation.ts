import type pg from 'pg';
import type { Priority } from '../contract/job-types.js';
import type { Db } from '../lib/db.js';

/** The degradation setting, its audit trail, and the admission ledger. One function per statement. */
export interface DegradationSetting {
  pausedPriorities: Priority[];
  /** Per paused priority: when it was first paused (ISO 8601 UTC). */
  pausedSince: Partial<Record<Priority, string>>;
  /** Pauses by job type, by tenant or by both (migration 0036); [] when none. */
  pausedScopes: PauseScope[];
  recoveryRatePerMinute: number;
  /** Job types an operator switched to the fallback upstream (each declares `fallback`). */
  fallbackJobTypes: string[];
  /** Per enabled type: when and by whom it was first enabled (ISO 8601 UTC). */
  fallbackSince: Record<string, FallbackSince>;
  /** The ramp's stop condition (defaults: 0.5, 60 s, 10 attempts). */
  rampStop: RampStop;
  /** Set when the stop condition paused a ramp; cleared once an operator resumes that priority. */
  rampHalted: RampHalt | null;
  updatedBy: string;
  updatedAt: string;
}

/**
 * One pause beside the priorities: a job type (every tenant), a tenant (every type), or one
 * tenant's jobs of one type. A missing key matches any; at least one is set.
 */
export interface PauseScope {
  tenantId?: string;
  jobType?: string;
  /** When it was paused (ISO 8601 UTC). */
  since: string;
  /** The operator: for the audit and the console, never shown to tenants. */
  by: string;
  reason?: string;
}

/** Whether a pause holds a job of this tenant and type. */
export const scopeMatches = (p: Pick<PauseScope, 'tenantId' | 'jobType'>, job: { tenantId: string; jobType: string }): boolean =>
  (p.tenantId === undefined || p.tenantId === job.tenantId) && (p.jobType === undefined || p.jobType === job.jobType);

/**
 * The pause of a type, tenant or pair that holds the job, most specific first (the pair, then
 * the type, then the tenant): its words name what is paused and since when.
 */
export function holdingScope(scopes: readonly PauseScope[], job: { tenantId: string; jobType: string }): PauseScope | undefined {
  const rank = (p: PauseScope) => (p.tenantId !== undefined && p.jobType !== undefined ? 0 : p.jobType !== undefined ? 1 : 2);
  return scopes.filter((p) => scopeMatches(p, job)).sort((a, b) => rank(a) - rank(b))[0];
}

/** The same pause (same tenant and type, either unset alike). */
export const sameScope = (a: Pick<PauseScope, 'tenantId' | 'jobType'>, b: Pick<PauseScope, 'tenantId' | 'jobType'>): boolean =>
  (a.tenantId ?? null) === (b.tenantId ?? null) && (a.jobType ?? null) === (b.jobType ?? null);

/**
 * SQL: a pause of the setting (alias `g`) holds the job (alias `i`, a `job_intents` row), by its
 * priority or by a scope. The scopes are a few jsonb entries on the one setting row, so this is
 * a scan of a short array beside the row the statement already reads.
 */
export const heldByPauseSql = (i: string, g: string): string => `(${i}.priority = ANY (${g}.paused_priorities) OR ${heldByScopeSql(i, g)})`;

/** SQL: a scope pause of the setting (alias `g`) holds the job (alias `i`). */
export const heldByScopeSql = (i: string, g: string): string =>
  `EXISTS (SELECT 1 FROM jsonb_array_elements(${g}.paused_scopes) p
            WHERE coalesce(p->>'tenantId', ${i}.tenant_id) = ${i}.tenant_id AND coalesce(p->>'jobType', ${i}.job_type) = ${i}.job_type)`;

export interface RampStop {
  /** Share of failed upstream attempts (0-1] that halts the ramp. */
  failureRatio: number;
  /** The window the share is taken over, in seconds. */
  windowSeconds: number;
  /** Fewer attempts than this in the window never halt it (too little evidence). */
  minAttempts: number;
}

export interface RampHalt {
  at: string;
  priorities: Priority[];
  attempts: number;
  failures: number;
  reason: string;
}

export const DEFAULT_RAMP_STOP: RampStop = { failureRatio: 0.5, windowSeconds: 60, minAttempts: 10 };

export interface FallbackSince {
  at: string;
  by: string;
}

export interface SettingRow {
  paused_priorities: Priority[];
  paused_since: Partial<Record<Priority, string>>;
  paused_scopes: PauseScope[];
  recovery_rate_per_minute: number;
  updated_by: string;
  updated_at: Date;
  fallback_job_types: string[];
  fallback_since: Record<string, FallbackSince>;
  ramp_stop: RampStop;
  ramp_halted: RampHalt | null;
}

export const toSetting = (r: SettingRow): DegradationSetting => ({
  pausedPriorities: r.paused_priorities,
  pausedSince: r.paused_since,
  pausedScopes: r.paused_scopes ?? [],
  recoveryRatePerMinute: r.recovery_rate_per_minute,
  fallbackJobTypes: r.fallback_job_types,
  fallbackSince: r.fallback_since,
  rampStop: { ...DEFAULT_RAMP_STOP, ...r.ramp_stop },
  rampHalted: r.ramp_halted,
  updatedBy: r.updated_by,
  updatedAt: r.updated_at.toISOString(),
});

/** The setting's columns, for hot-path statements that read it beside their own row (`SettingRow`). */
export const SETTING_COLUMNS = (alias: string): string =>
  [
    'paused_priorities',
    'paused_since',
    'paused_scopes',
    'recovery_rate_per_minute',
    'updated_by',
    'updated_at',
    'fallback_job_types',
    'fallback_since',
  ]
    .map((c) => `${alias}.${c}`)
    .join(', ');

export async function getSetting(db: Db): Promise<DegradationSetting> {
  const r = await db.query<SettingRow>('SELECT * FROM degradation_setting WHERE id = 1');
  return toSetting(r.rows[0]!);
}

/** Locks the one row for the rest of the transaction: concurrent changes apply one after the other, each audited against the state it replaced. */
export async function lockSetting(tx: pg.PoolClient): Promise<DegradationSetting & { now: Date }> {
  const r = await tx.query<SettingRow & { now: Date }>('SELECT *, now() AS now FROM degradation_setting WHERE id = 1 FOR UPDATE');
  return { ...toSetting(r.rows[0]!), now: r.rows[0]!.now };
}

export async function writeSetting(tx: pg.PoolClient, s: Omit<DegradationSetting, 'updatedAt'>): Promise<DegradationSetting> {
  const r = await tx.query<SettingRow>(
    `UPDATE degradation_setting SET paused_priorities = $1, paused_since = $2, recovery_rate_per_minute = $3,
            updated_by = $4, fallback_job_types = $5, fallback_since = $6, ramp_stop = $7, ramp_halted = $8,
            paused_scopes = $9, updated_at = now()
      WHERE id = 1 RETURNING *`,
    [
      s.pausedPriorities,
      JSON.stringify(s.pausedSince),
      s.recoveryRatePerMinute,
      s.updatedBy,
      s.fallbackJobTypes,
      JSON.stringify(s.fallbackSince),
      JSON.stringify(s.rampStop),
      s.rampHalted ? JSON.stringify(s.rampHalted) : null,
      JSON.stringify(s.pausedScopes),
    ],
  );
  return toSetting(r.rows[0]!);
}

/**
 * Upstream attempts of jobs the ramp admitted (an admission row with `admitted_at`), finished
 * in the last `windowSeconds`: all that called the upstream, and those that failed retryably
 * (the upstream's trouble: 5xx, 429, timeouts, lost leases; a definite 4xx is the request's).
 */
export async function rampAttempts(db: Db, windowSeconds: number): Promise<{ attempts: number; failures: number; now: Date }> {
  const r = await db.query<{ attempts: number; failures: number; now: Date }>(
    `SELECT count(*)::int AS attempts, clock_timestamp() AS now,
            (count(*) FILTER (WHERE a.outcome IN ('retryable', 'lease_expired')))::int AS failures
       FROM job_attempts a
      WHERE a.finished_at > clock_timestamp() - $1 * interval '1 second'
        AND a.outcome IN ('succeeded', 'retryable', 'non_retryable', 'lease_expired')
        AND EXISTS (SELECT 1 FROM admissions d WHERE d.job_id = a.job_id AND d.admitted_at IS NOT NULL)`,
    [windowSeconds],
  );
  return r.rows[0]!;
}

export interface AuditEntry {
  actor: string;
  keyId: string;
  remoteAddr: string | null;
  reason: string | null;
  before: unknown;
  after: unknown;
  at?: string;
}

export async function insertAudit(tx: pg.PoolClient, a: AuditEntry): Promise<void> {
  await tx.query('INSERT INTO degradation_audit (actor, key_id, remote_addr, reason, before, after) VALUES ($1, $2, $3, $4, $5, $6)', [
    a.actor,
    a.keyId,
    a.remoteAddr,
    a.reason,
    JSON.stringify(a.before),
    JSON.stringify(a.after),
  ]);
}

export async function recentAudit(db: Db, limit: number): Promise<AuditEntry[]> {
  const r = await db.query<{
    actor: string;
    key_id: string;
    remote_addr: string | null;
    reason: string | null;
    before: unknown;
    after: unknown;
    at: Date;
  }>('SELECT * FROM degradation_audit ORDER BY id DESC LIMIT $1', [limit]);
  return r.rows.map((x) => ({
    actor: x.actor,
    keyId: x.key_id,
    remoteAddr: x.remote_addr,
    reason: x.reason,
    before: x.before,
    after: x.after,
    at: x.at.toISOString(),
  }));
}

// ---- admission ledger ----

/** Deferred jobs by priority right now. */
export async function deferredByPriority(db: Db): Promise<Partial<Record<Priority, number>>> {
  const r = await db.query<{ priority: Priority; n: number }>(
    `SELECT priority, count(*)::int AS n FROM job_intents WHERE status = 'deferred' GROUP BY priority`,
  );
  return Object.fromEntries(r.rows.map((x) => [x.priority, x.n]));
}

/**
 * One batch of the retention cleanup: audit rows older than `days`. Audit rows are append-only
 * (schema/0029): a plain DELETE is refused by a trigger, so the cleanup goes through the one
 * function that may prune them, and only rows past their age.
 */
export async function deleteExpiredAudit(db: Db, days: number, limit: number): Promise<number> {
  const r = await db.query<{ n: number }>('SELECT durable_jobs_prune_degradation_audit($1, $2) AS n', [days, limit]);
  return r.rows[0]?.n ?? 0;
}
