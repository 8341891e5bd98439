import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobsClient } from '../../services/intake.js';
import { createPool } from '../../lib/db.js';
import { freePort } from '../../scripts/lib/dev-server.js';
import { buildApp } from '../../server/app.js';
import { ADMIN_KEY, startHarness, TENANTS, uid, waitFor, type Harness } from '../support/harness.js';
import { defaultJobRegistry } from '../../jobs/index.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('health-rejections', { workers: 0 });
});
afterAll(async () => {
  await h?.close();
});

/** A second API process whose Temporal or Postgres is a closed port: a real outage. */
async function degradedApi(which: 'temporal' | 'postgres') {
  const deadPort = await freePort();
  const pool =
    which === 'postgres' ? createPool(`postgres://postgres@127.0.0.1:${deadPort}/nothing`, h.log) : createPool(h.databaseUrl, h.log);
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
    adminApiKey: ADMIN_KEY,
    webhookSecrets: {},
    version: 'test',
  });
  const submit = () =>
    app.inject({
      method: 'POST',
      url: '/v1/jobs',
      payload: { type: 'summarize', input: { text: 'rejected' } },
      headers: { authorization: `Bearer ${TENANTS.a.key}`, 'idempotency-key': `rej-${uid()}`, 'content-type': 'application/json' },
    });
  return {
    app,
    submit,
    close: async () => {
      await app.close();
      await pool.end();
    },
  };
}

const health = async () =>
  (await h.api('/v1/admin/queue-health', { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body;

describe('intake rejections (503) in the health report', () => {
  it('Temporal down: every 503 is counted durably, so the healthy API process reports it too', async () => {
    const api = await degradedApi('temporal');
    try {
      for (let i = 0; i < 3; i++) expect((await api.submit()).statusCode).toBe(503);
      await waitFor('the rejections to be recorded', async () => (await health()).intakeRejections.perWindow['1m'] === 3);
      const m = (await api.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body;
      expect(m).toContain('durable_jobs_intake_rejections_total{cause="temporal"} 3');
    } finally {
      await api.close();
    }
    const f = await health();
    expect(f.intakeRejections.perWindow).toMatchObject({ '5m': 3, '15m': 3 });
    expect(f.intakeRejections.perMinute['1m']).toBeGreaterThan(0);
    const m = await fetch(`${h.opsUrl}/metrics`).then((r) => r.text());
    expect(m).toContain('durable_jobs_intake_rejections{window="5m"} 3');
  });

  it('Postgres down: the process still counts it and says its figures are unavailable', async () => {
    const api = await degradedApi('postgres');
    try {
      expect((await api.submit()).statusCode).toBe(503);
      const m = (await api.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).body;
      expect(m).toContain('durable_jobs_intake_rejections_total{cause="postgres"} 1');
      expect(m).toContain('durable_jobs_health_up 0');
      expect(m).not.toMatch(/^durable_jobs_backlog_jobs\{/m);
    } finally {
      await api.close();
    }
  });
});
