// Concurrency caps hold across worker processes without a lock that serialises them: three
// processes take and release slots of two job types and three tenants at once, and the
// recorded holds never exceed the per-tenant cap, the per-type cap or the cap across types.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { migrate } from '../../lib/migrate.js';
import { createTestDatabase } from '../support/harness.js';
import type { SlotChurn } from '../../scripts/slot-churn.js';

const CHURN = fileURLToPath(new URL('../../scripts/slot-churn.ts', import.meta.url));

let url: string;
let pool: pg.Pool;

beforeAll(async () => {
  url = await createTestDatabase('slot_processes', inject('databaseUrl'));
  pool = createPool(url, createLogger('test', 'silent'), 2);
  await migrate(pool);
  await pool.query(`CREATE TABLE slot_audit (id bigserial PRIMARY KEY, job_type text NOT NULL, tenant_id text NOT NULL,
                      started timestamptz NOT NULL DEFAULT clock_timestamp(), ended timestamptz)`);
});
afterAll(async () => {
  await pool?.end();
});

function churn(c: SlotChurn): Promise<{ acquired: number; refused: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHURN, JSON.stringify(c)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`churn exited ${code}: ${err}`)),
    );
  });
}

/** The most holds that overlapped at any hold's start, among holds that share `same`. */
async function peak(same: string): Promise<number> {
  const r = await pool.query<{ n: number }>(
    `SELECT coalesce(max(n), 0)::int AS n FROM (
       SELECT a.id, count(*) AS n FROM slot_audit a JOIN slot_audit b
           ON b.started <= a.started AND b.ended > a.started ${same}
        GROUP BY a.id) x`,
  );
  return r.rows[0]!.n;
}

describe('concurrency slots across worker processes', () => {
  it('three processes acquiring at once never exceed the per-tenant, per-type and total caps', async () => {
    const c: SlotChurn = {
      databaseUrl: url,
      jobTypes: ['alpha', 'beta'],
      tenants: ['t1', 't2', 't3'],
      perTenant: 2,
      global: 3,
      total: 4,
      durationMs: 6_000,
      holdMs: 15,
      audit: true,
    };
    const results = await Promise.all([churn(c), churn(c), churn(c)]);
    // Every process got slots (no process starved behind a lock), and the caps made some wait.
    for (const r of results) expect(r.acquired).toBeGreaterThan(0);
    expect(results.reduce((n, r) => n + r.refused, 0)).toBeGreaterThan(0);
    const unfinished = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM slot_audit WHERE ended IS NULL');
    expect(unfinished.rows[0]!.n).toBe(0);
    expect(await peak('AND b.job_type = a.job_type AND b.tenant_id = a.tenant_id')).toBeLessThanOrEqual(2);
    expect(await peak('AND b.job_type = a.job_type')).toBeLessThanOrEqual(3);
    expect(await peak('')).toBeLessThanOrEqual(4);
    // The caps were reached, not just respected by a trickle.
    expect(await peak('')).toBe(4);
    const leases = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM concurrency_leases');
    expect(leases.rows[0]!.n).toBe(0);
    const held = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM concurrency_slots WHERE lease_id IS NOT NULL');
    expect(held.rows[0]!.n).toBe(0);
  });
});
