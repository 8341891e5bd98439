// Audit rows are append-only for the application's database role (issue 39 §4, F9): UPDATE,
// DELETE and TRUNCATE of dead_letter_actions, replay_actions, degradation_audit, the bulk actions' item and command rows and job_actions are refused,
// even for the role that owns the tables (the app, as migrations and the app share DATABASE_URL
// by default). Only the retention cleanup's own function prunes old degradation audit.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { deleteExpiredAudit } from '../../store/degradation.js';
import { insertReplayAction } from '../../store/replay-actions.js';
import { withTransaction } from '../../lib/db.js';
import { createTestDatabase } from '../support/harness.js';

let pool: pg.Pool;
const TABLES = [
  'dead_letter_actions',
  'replay_actions',
  'degradation_audit',
  'bulk_action_items',
  'bulk_action_commands',
  'job_actions',
] as const;

beforeAll(async () => {
  const url = await createTestDatabase('audit');
  pool = createPool(url, createLogger('test-audit', 'silent'));
  // Test-only key, not a real credential.
  await prepareStack(pool, { tenants: [{ tenantId: 'audit-tenant', apiKey: 'audit-tenant-key-00000000001' }] });
  await pool.query(
    "INSERT INTO job_intents (job_id, tenant_id, job_type, input_hash, input) VALUES ('job-audit', 'audit-tenant', 'summarize', 'h', '{}')",
  );
  await pool.query(
    `INSERT INTO dead_letters (id, job_id, run_id, tenant_id, job_type, error_class, message, attempts, code_version, input_hash, input_ref, first_failure_at, last_failure_at)
     VALUES ('dl-audit', 'job-audit', 'run-1', 'audit-tenant', 'summarize', 'invalid_request', 'refused', 1, 'test', 'h', 'job_intents:job-audit', now(), now())`,
  );
  await pool.query("INSERT INTO dead_letter_actions (dead_letter_id, action, actor) VALUES ('dl-audit', 'recorded', 'system')");
  await insertReplayAction(pool, { replayId: 'replay-audit', action: 'paused', actor: 'alice' });
  await pool.query(`INSERT INTO degradation_audit (actor, key_id, before, after) VALUES ('alice', 'k', '{}', '{}')`);
  await pool.query(
    `INSERT INTO bulk_actions (id, action, requested_by, selector, options, total) VALUES ('bulk-audit', 'cancel', 'alice', '{}', '{}', 1)`,
  );
  await pool.query(
    `INSERT INTO bulk_action_items (bulk_id, target_id, outcome, actor, granted_at) VALUES ('bulk-audit', 'job-audit', 'applied', 'alice', now())`,
  );
  await pool.query(`INSERT INTO bulk_action_commands (bulk_id, command, actor) VALUES ('bulk-audit', 'paused', 'alice')`);
  await pool.query(
    `INSERT INTO job_actions (job_id, action, actor, result_job_id) VALUES ('job-audit', 'rerun', 'alice', 'job-audit-rerun-1')`,
  );
});
afterAll(async () => {
  await pool?.end();
});

const refusal = async (sql: string) => {
  const err = await pool.query(sql).then(
    () => undefined,
    (e: Error & { code?: string }) => e,
  );
  return err;
};

describe('audit rows are append-only for the application', () => {
  for (const table of TABLES) {
    it(`${table}: UPDATE, DELETE and TRUNCATE are refused; INSERT and SELECT work`, async () => {
      const before = (await pool.query(`SELECT count(*)::int AS n, max(actor) AS actor FROM ${table}`)).rows[0];
      expect(before.n).toBeGreaterThan(0);
      for (const sql of [`UPDATE ${table} SET actor = 'mallory'`, `DELETE FROM ${table}`, `TRUNCATE ${table} CASCADE`]) {
        const err = await refusal(sql);
        expect(err, sql).toBeDefined();
        expect(err!.code, sql).toBe('42501');
        expect(err!.message, sql).toMatch(/audit rows are append-only/);
      }
      const after = (await pool.query(`SELECT count(*)::int AS n, max(actor) AS actor FROM ${table}`)).rows[0];
      expect(after).toEqual(before);
    });
  }

  it('the app really is the owner here: privileges alone would not have stopped it', async () => {
    const r = await pool.query(
      `SELECT bool_and(pg_get_userbyid(c.relowner) = current_user) AS owns FROM pg_class c WHERE c.relname = ANY($1::text[])`,
      [TABLES],
    );
    expect(r.rows[0].owns).toBe(true);
  });

  it('retention prunes degradation audit past its age through its own function, and nothing younger', async () => {
    await pool.query(
      `INSERT INTO degradation_audit (actor, key_id, before, after, at) VALUES ('old', 'k', '{}', '{}', now() - interval '400 days')`,
    );
    const young = (await pool.query("SELECT count(*)::int AS n FROM degradation_audit WHERE at > now() - interval '1 day'")).rows[0].n;
    expect(await deleteExpiredAudit(pool, 365, 100)).toBe(1);
    expect((await pool.query("SELECT count(*)::int AS n FROM degradation_audit WHERE actor = 'old'")).rows[0].n).toBe(0);
    expect((await pool.query('SELECT count(*)::int AS n FROM degradation_audit')).rows[0].n).toBe(young);
    // The prune's permission ends with it: in the same transaction, a plain DELETE is refused again.
    const err = await withTransaction(pool, async (tx) => {
      await deleteExpiredAudit(tx, 365, 100);
      return tx.query('DELETE FROM degradation_audit').then(
        () => undefined,
        (e: Error) => e,
      );
    }).catch((e: Error) => e);
    expect(err?.message).toMatch(/audit rows are append-only/);
    expect((await pool.query('SELECT count(*)::int AS n FROM degradation_audit')).rows[0].n).toBe(young);
  });
});
