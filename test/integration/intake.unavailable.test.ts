import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { createPool } from '../../lib/db.js';
import { jobIdFor, keyHash } from '../../lib/ids.js';
import { buildApp } from '../../server/app.js';
import { startHarness, TENANTS, uid, type Harness } from '../support/harness.js';
import { freePort } from '../../scripts/lib/dev-server.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('unavailable');
});
afterAll(async () => {
  await h?.close();
});

/** An API whose Temporal or Postgres is a closed port: a real outage, not a mock. */
async function degradedApi(which: 'temporal' | 'postgres') {
  const deadPort = await freePort();
  const pool = which === 'postgres' ? createPool(`postgres://postgres@127.0.0.1:${deadPort}/nothing`, h.log) : h.pool;
  const connection =
    which === 'temporal'
      ? Connection.lazy({ address: `127.0.0.1:${deadPort}`, connectTimeout: 1_000 })
      : (h.temporal.connection as Connection);
  const temporal = new Client({ connection, namespace: h.temporal.options.namespace });
  const jobs = createJobsClient({ jobs: defaultJobRegistry, pool, temporal, taskQueue: h.taskQueue, startTimeoutMs: 2_000 });
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool,
    temporal,
    jobs,
    log: h.log,
    adminApiKey: undefined,
    webhookSecrets: {},
    version: 'test',
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return {
    submit: (key: string) =>
      fetch(`http://127.0.0.1:${port}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TENANTS.a.key}`, 'idempotency-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'summarize', input: { text: 'Outage test. Nothing half accepted.' } }),
      }),
    ready: () => fetch(`http://127.0.0.1:${port}/readyz`),
    close: async () => {
      await app.close();
      if (which === 'postgres') await pool.end();
    },
  };
}

describe('intake when a dependency is down', () => {
  it('Temporal down: 503 with Retry-After, no intent row, no workflow; a later retry with the same key succeeds', async () => {
    const api = await degradedApi('temporal');
    const key = `outage-${uid()}`;
    try {
      const r = await api.submit(key);
      expect(r.status).toBe(503);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = (await r.json()) as { type: string };
      expect(body.type).toBe('urn:durable-jobs:problem:unavailable');
      expect((await api.ready()).status).toBe(503);
    } finally {
      await api.close();
    }
    // Nothing half accepted: no intent row for this key.
    const leftover = await h.pool.query('SELECT count(*)::int AS n FROM job_intents WHERE key_hash = $1', [keyHash(TENANTS.a.id, key)]);
    expect(leftover.rows[0].n).toBe(0);
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n;
    // Retrying the same intent on a healthy API goes through normally, as a new job.
    const ok = await h.submit('summarize', { text: 'Outage test. Nothing half accepted.' }, { key });
    expect(ok.status).toBe(202);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM job_intents')).rows[0].n).toBe(before + 1);
    await h.waitForStatus(ok.body.jobId, 'succeeded');
  });

  it('Postgres down: 503 with Retry-After, and no workflow was started', async () => {
    const api = await degradedApi('postgres');
    const key = `pg-outage-${uid()}`;
    try {
      // The API key check needs Postgres too: it must answer 503, not 401 or 500.
      const r = await api.submit(key);
      expect(r.status).toBe(503);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await api.close();
    }
    // No workflow was started for the job the client was refused.
    const jobId = jobIdFor(TENANTS.a.id, 'summarize', key);
    await expect(h.temporal.workflow.getHandle(jobId).describe()).rejects.toThrow(/not found/i);
    const ok = await h.submit('summarize', { text: 'Outage test. Nothing half accepted.' }, { key });
    expect(ok.body.jobId).toBe(jobId);
    expect(ok.status).toBe(202);
    await h.waitForStatus(ok.body.jobId, 'succeeded');
  });
});
