import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { ensureSchedules, productSchedules, scheduleIdFor } from '../../services/schedules.js';
import type { RetentionInput, RetentionReport } from '../../contract/retention.js';
import { startHarness, uid, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('retention');
});
afterAll(async () => {
  await h?.close();
});

/** The per-job tables the cleanup prunes, and the column each row's age is read from. */
const PER_JOB: Array<[string, string[]]> = [
  ['job_attempts', ['started_at', 'finished_at']],
  ['effects', ['first_attempt_at', 'last_attempt_at', 'updated_at']],
  ['outbox', ['created_at', 'deliver_by']],
  ['activity_leases', ['started_at', 'deadline_at']],
  ['intent_duplicates', ['received_at']],
];

/** Moves a job and every row it left `days` into the past (its intent's finish included). */
async function backdate(jobId: string, days: number): Promise<void> {
  const ago = `now() - ${days} * interval '1 day'`;
  await h.pool.query(
    `UPDATE job_intents SET created_at = ${ago}, updated_at = ${ago}, finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE ${ago} END WHERE job_id = $1`,
    [jobId],
  );
  for (const [table, cols] of PER_JOB)
    await h.pool.query(`UPDATE ${table} SET ${cols.map((c) => `${c} = ${ago}`).join(', ')} WHERE job_id = $1`, [jobId]);
  await h.pool.query(
    `UPDATE dead_letters SET created_at = ${ago}, updated_at = ${ago}, first_failure_at = ${ago}, last_failure_at = ${ago} WHERE job_id = $1`,
    [jobId],
  );
}

async function rowsOf(jobId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ['job_intents', ...PER_JOB.map(([t]) => t), 'dead_letters']) {
    out[t] = (await h.pool.query(`SELECT count(*)::int AS n FROM ${t} WHERE job_id = $1`, [jobId])).rows[0].n;
  }
  return out;
}

/** A summarize job (with a notification, so it has an outbox row) run to its end; submitted twice (a duplicate row). */
async function finishedJob(opts: { refuseNotification?: boolean } = {}): Promise<{ jobId: string; key: string; input: unknown }> {
  if (opts.refuseNotification) await h.simFault({ path: '/v1/notifications', times: 1, status: 400 });
  const key = `ret-${uid()}`;
  const input = { text: `retention ${key}`, notifyEmail: 'ret@example.com' };
  const r = await h.submit('summarize', input, { key });
  expect(r.status).toBe(202);
  expect((await h.submit('summarize', input, { key })).status).toBe(200);
  await h.temporal.workflow.getHandle(r.body.jobId).result();
  return { jobId: r.body.jobId, key, input };
}

const run = (input: RetentionInput) =>
  h.temporal.workflow.execute('retentionCleanup', {
    taskQueue: h.taskQueue,
    workflowId: `retention-${uid()}`,
    args: [input],
  }) as Promise<RetentionReport>;

describe('retention cleanup', () => {
  it('deletes old rows in small batches and keeps what live jobs, open dead letters and the idempotency window need', async () => {
    // The configuration as a deployment would set it: 30 days everywhere, intents of finished
    // jobs exactly the 7-day idempotency window; batches of 2 rows.
    const config = loadConfig(
      { RETENTION_DAYS_BY_TABLE: '{"job_intents": 7}', RETENTION_BATCH_SIZE: '2' },
      { jobTypes: defaultJobRegistry.names, mode: 'dev' },
    ).retention;
    expect(config).toMatchObject({
      idempotencyWindowDays: 7,
      batchSize: 2,
      days: { job_intents: 7, effects: 30, job_attempts: 30, health_samples: 1, degradation_audit: 365 },
    });
    const input: RetentionInput = { days: config.days, batchSize: config.batchSize };

    // Old finished jobs (40 days) and one just past the window (10 days): they go, whole.
    const old = [await finishedJob(), await finishedJob(), await finishedJob()];
    const pastWindow = await finishedJob();
    // Inside the window (3 days): kept, and its key still answers with the same job.
    const recent = await finishedJob();
    // An old job whose notification failed for good: an operator still has to decide, so it stays.
    const failedNotification = await finishedJob({ refuseNotification: true });
    // An unfinished job (its intent put back to running) whose rows are all 40 days old.
    const unfinished = await finishedJob();
    await h.pool.query(`UPDATE job_intents SET status = 'running', finished_at = NULL WHERE job_id = $1`, [unfinished.jobId]);
    // An open dead letter, 40 days old: its job, effects and attempts are the evidence.
    await h.simFault({ path: '/v1/receipts', times: 1, status: 400 });
    const dl = await h.submit('purchase', { amountCents: 300, currency: 'EUR', customer: `cus_${uid()}`, receiptEmail: 'x@example.com' });
    const dead = await h.waitForStatus(dl.body.jobId, 'dead_lettered');
    expect(dead.deadLetterId).toBeTruthy();

    for (const j of old) await backdate(j.jobId, 40);
    await backdate(pastWindow.jobId, 10);
    await backdate(recent.jobId, 3);
    await backdate(failedNotification.jobId, 40);
    await backdate(unfinished.jobId, 40);
    await backdate(dl.body.jobId, 40);

    const before: Record<string, Record<string, number>> = Object.fromEntries(
      await Promise.all([...old, pastWindow, recent, failedNotification, unfinished].map(async (j) => [j.jobId, await rowsOf(j.jobId)])),
    );
    for (const j of old)
      expect(
        Object.values(before[j.jobId]!)
          .slice(0, 6)
          .every((n) => n > 0),
      ).toBe(true);
    const dlBefore = await rowsOf(dl.body.jobId);
    expect(dlBefore).toMatchObject({ job_intents: 1, dead_letters: 1 });
    expect(dlBefore.effects).toBeGreaterThan(0);
    expect(dlBefore.job_attempts).toBeGreaterThan(0);

    // Tables without a job: an old and a fresh row each.
    await h.pool.query(`INSERT INTO scan_runs (run_id, workflow_id, scan_now, started_at, finished_at) VALUES
      ('old-${uid()}', 'w', now(), now() - interval '40 days', now() - interval '40 days'), ('new-${uid()}', 'w', now(), now(), now())`);
    await h.pool.query(`INSERT INTO degradation_audit (actor, key_id, before, after, at) VALUES
      ('a', 'k', '{}', '{}', now() - interval '400 days'), ('a', 'k', '{}', '{}', now() - interval '40 days')`);
    await h.pool.query(
      `INSERT INTO health_samples (minute, figures) VALUES (date_trunc('minute', now()) - interval '2 days', '{}'), (date_trunc('minute', now()) - interval '1 hour', '{}')`,
    );
    await h.pool.query(
      `INSERT INTO intake_rejections (minute, cause, count) VALUES (date_trunc('minute', now()) - interval '40 days', 'x', 1), (date_trunc('minute', now()), 'x', 1)`,
    );
    await h.pool
      .query(`INSERT INTO webhook_deliveries (source, webhook_id, event_type, payload, outcome, first_seen_at, last_received_at) VALUES
      ('sim', 'old-signalled-${uid()}', 'e', '{}', 'signalled', now() - interval '40 days', now() - interval '40 days'),
      ('sim', 'old-pending-${uid()}', 'e', '{}', 'pending_signal', now() - interval '40 days', now() - interval '40 days'),
      ('sim', 'new-${uid()}', 'e', '{}', 'signalled', now(), now())`);
    const count = async (sql: string) => (await h.pool.query(sql)).rows[0].n as number;
    const others = async () => ({
      scanRuns: await count('SELECT count(*)::int AS n FROM scan_runs'),
      audit: await count('SELECT count(*)::int AS n FROM degradation_audit'),
      samples: await count('SELECT count(*)::int AS n FROM health_samples'),
      rejections: await count('SELECT count(*)::int AS n FROM intake_rejections'),
      webhooks: await count(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE source = 'sim' AND event_type = 'e'`),
      pendingWebhooks: await count(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE outcome = 'pending_signal' AND event_type = 'e'`,
      ),
    });
    const othersBefore = await others();

    // Concurrency leases: one a dead worker left 2 days ago with its slot (nobody took it over),
    // one as old whose slot was taken over by a live lease, one expired an hour ago, one held.
    const scope = `type:retention-${uid()}`;
    const lease = async (expires: string, n: number, holdsSlot: boolean): Promise<string> => {
      const id = (
        await h.pool.query<{ id: string }>(
          `INSERT INTO concurrency_leases (job_type, tenant_id, holder, acquired_at, expires_at, slot_scopes, slot_ns)
           VALUES ('retention', 't', 'h', ${expires} - interval '15 seconds', ${expires}, ARRAY[$1::text], ARRAY[$2::int]) RETURNING id::text`,
          [scope, n],
        )
      ).rows[0]!.id;
      if (holdsSlot)
        await h.pool.query(
          `INSERT INTO concurrency_slots (scope, n, lease_id, expires_at) VALUES ($1, $2, $3, ${expires})
           ON CONFLICT (scope, n) DO UPDATE SET lease_id = EXCLUDED.lease_id, expires_at = EXCLUDED.expires_at`,
          [scope, n, id],
        );
      return id;
    };
    const deadLease = await lease(`now() - interval '2 days'`, 1, true);
    const takenOverLease = await lease(`now() - interval '2 days'`, 2, true);
    const successor = await lease(`now() + interval '1 minute'`, 2, true);
    const recentLease = await lease(`now() - interval '1 hour'`, 3, true);
    const slots = async () =>
      (await h.pool.query(`SELECT n, lease_id::text AS lease FROM concurrency_slots WHERE scope = $1 ORDER BY n`, [scope])).rows;
    const leases = async () =>
      (await h.pool.query(`SELECT id::text FROM concurrency_leases WHERE job_type = 'retention' ORDER BY id`)).rows.map((r) => r.id);
    expect(await leases()).toEqual([deadLease, takenOverLease, successor, recentLease]);
    expect(await slots()).toEqual([
      { n: 1, lease: deadLease },
      { n: 2, lease: successor },
      { n: 3, lease: recentLease },
    ]);

    const first = await run(input);

    // Live evidence stayed, every row of it.
    expect(await rowsOf(unfinished.jobId)).toEqual(before[unfinished.jobId]);
    expect(await rowsOf(dl.body.jobId)).toEqual(dlBefore);
    expect(await rowsOf(failedNotification.jobId)).toMatchObject({ job_intents: 1, outbox: 1, effects: 0 });
    expect((await h.pool.query(`SELECT state FROM dead_letters WHERE job_id = $1`, [dl.body.jobId])).rows).toEqual([{ state: 'open' }]);
    // Inside the idempotency window: the key still answers 200 with the same job.
    expect(await rowsOf(recent.jobId)).toMatchObject({ job_intents: 1 });
    const again = await h.submit('summarize', recent.input, { key: recent.key });
    expect(again.status).toBe(200);
    expect(again.body.jobId).toBe(recent.jobId);
    expect((await h.api(`/v1/jobs/${recent.jobId}`)).body).toMatchObject({ status: 'succeeded' });

    // Old rows went, all of them, though each statement deleted at most 2.
    const gone = [...old, pastWindow];
    for (const j of gone)
      expect(await rowsOf(j.jobId)).toEqual({
        job_intents: 0,
        job_attempts: 0,
        effects: 0,
        outbox: 0,
        activity_leases: 0,
        intent_duplicates: 0,
        dead_letters: 0,
      });
    // Per table: every row of the jobs that went, and the 40-day-old rows of the job kept for
    // its failed notification (that job is finished: only its intent and outbox row must stay).
    const sum = (t: string) => [...gone, failedNotification].reduce((a, j) => a + before[j.jobId]![t]!, 0);
    expect(first.job_intents).toBe(gone.length);
    expect(first.job_intents).toBeGreaterThan(input.batchSize);
    expect(first.effects).toBe(sum('effects'));
    expect(first.job_attempts).toBe(sum('job_attempts'));
    expect(first.activity_leases).toBe(sum('activity_leases'));
    expect(first.outbox).toBe(sum('outbox') - 1);
    expect(first.intent_duplicates).toBe(sum('intent_duplicates'));
    expect(await others()).toEqual({
      ...othersBefore,
      scanRuns: othersBefore.scanRuns - 1,
      audit: othersBefore.audit - 1,
      samples: othersBefore.samples - 1,
      rejections: othersBefore.rejections - 1,
      webhooks: othersBefore.webhooks - 1,
    });
    expect((await others()).pendingWebhooks).toBe(othersBefore.pendingWebhooks);
    // The dead worker's lease went and its slot is free; the taken-over slot keeps its new holder.
    expect(first.concurrency_leases).toBe(2);
    expect(await leases()).toEqual([successor, recentLease]);
    expect(await slots()).toEqual([
      { n: 1, lease: null },
      { n: 2, lease: successor },
      { n: 3, lease: recentLease },
    ]);

    // Idempotent: a second run finds nothing left to delete.
    const second = await run(input);
    expect(Object.values(second).every((n) => n === 0)).toBe(true);
  });

  it('is declared as a Schedule Temporal accepts, with the configured retention as its input', async () => {
    const prefix = `${h.taskQueue}-retention`;
    const retention = loadConfig({}, { jobTypes: defaultJobRegistry.names, mode: 'dev' }).retention;
    const decls = productSchedules(defaultJobRegistry, retention).map((d) => ({ ...d, paused: true }));
    try {
      await ensureSchedules(h.temporal, h.taskQueue, decls, prefix);
      const d = await h.temporal.schedule.getHandle(scheduleIdFor(prefix, 'retention-cleanup')).describe();
      expect(d.action.workflowType).toBe('retentionCleanup');
      expect(d.action.args?.[0]).toEqual({ days: retention.days, batchSize: 500 });
    } finally {
      for (const d of decls)
        await h.temporal.schedule
          .getHandle(scheduleIdFor(prefix, d.name))
          .delete()
          .catch(() => undefined);
    }
  });
});
