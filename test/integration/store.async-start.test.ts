// A schedule's first attempt starts with an asynchronous commit (store/intents.ts
// `startAttempt`, `asyncCommit`): its lease row and `running` mark are evidence only, made
// durable by the effect's synchronous claim. These check, as Postgres reports it, that the
// setting holds for that statement's own transaction and for no other: the session the pool
// holds afterwards commits synchronously again, and a later attempt's start does too.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { prepareStack } from '../../services/stack.js';
import { insertIntent, startAttempt } from '../../store/intents.js';
import { createTestDatabase } from '../support/harness.js';

let pool: pg.Pool;
let client: pg.PoolClient;

beforeAll(async () => {
  const url = await createTestDatabase('async_start', inject('databaseUrl'));
  pool = createPool(url, createLogger('test', 'silent'), 2);
  await prepareStack(pool, { tenants: [{ tenantId: 'tenant-a', apiKey: 'key-tenant-a' }] });
  client = await pool.connect();
  // The tests' Postgres commits asynchronously everywhere (it is thrown away): this session
  // takes the product's durable default, which is what the statement must leave as it found it.
  await client.query('SET synchronous_commit = on');
});
afterAll(async () => {
  client?.release();
  await pool?.end();
});

const jobId = 'job-async-start';
const lease = (attempt: number) => ({
  jobId,
  runId: 'run-1',
  activityId: '1',
  attempt,
  activityType: 'summarizeText',
  startToCloseMs: 30_000,
  step: 'summarize',
});
const fence = (attempt: number) => ({ workflowId: jobId, runId: 'run-1', activityId: '1', attempt });

async function setting(): Promise<string> {
  const r = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
  return r.rows[0]!.synchronous_commit;
}

describe("an attempt's start commits asynchronously only where it is evidence", () => {
  it("the first attempt's start: off for its own transaction, written, and on again after it", async () => {
    await insertIntent(pool, {
      jobId,
      tenantId: 'tenant-a',
      jobType: 'summarize',
      keyHash: 'k',
      inputHash: 'i',
      input: { text: 'x' },
      priority: 'normal',
    });
    expect(await setting()).toBe('on');
    const first = await startAttempt(client, jobId, 1, fence(1), { withInput: true, lease: lease(1), asyncCommit: true });
    expect(first).toMatchObject({ marked: true, found: true, input: { text: 'x' }, commitMode: 'off' });
    // Visible at once, from another session too, and the setting did not outlive the statement.
    expect(await setting()).toBe('on');
    const rows = await pool.query(
      `SELECT (SELECT status FROM job_intents WHERE job_id = $1) AS status,
              (SELECT count(*)::int FROM activity_leases WHERE job_id = $1 AND attempt = 1) AS leases`,
      [jobId],
    );
    expect(rows.rows[0]).toEqual({ status: 'running', leases: 1 });
  });

  it("a later attempt's start, which fences the one before, commits synchronously", async () => {
    const second = await startAttempt(client, jobId, 2, fence(2), { lease: lease(2) });
    expect(second).toMatchObject({ marked: true, commitMode: 'on' });
    expect(await setting()).toBe('on');
  });
});
