import { defaultJobRegistry } from '../../jobs/index.js';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msToTs } from '@temporalio/common/lib/time.js';
import { createJobsClient } from '../../services/intake.js';
import { ensureSearchAttributes } from '../../lib/temporal.js';
import { buildApp } from '../../server/app.js';
import { ADMIN_KEY, startHarness, uid, waitFor, type Harness } from '../support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('readyz');
});
afterAll(async () => {
  await h?.close();
});

/** An API on the suite's Temporal, but on another namespace: one that may lack what intake needs. */
async function apiOn(namespace: string) {
  const temporal = new Client({ connection: h.temporal.connection as Connection, namespace });
  const jobs = createJobsClient({ jobs: defaultJobRegistry, pool: h.pool, temporal, taskQueue: h.taskQueue, startTimeoutMs: 2_000 });
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool: h.pool,
    temporal,
    jobs,
    log: h.log,
    adminApiKey: ADMIN_KEY,
    webhookSecrets: {},
    version: 'test',
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return {
    // With an admin key: the reasons (without one, /readyz says ready or not only: F7).
    ready: async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      return { status: r.status, body: (await r.json()) as { detail?: string; temporal?: string } };
    },
    close: () => app.close(),
  };
}

describe('/readyz says whether a job could really be accepted', () => {
  it('503 while the namespace does not exist or lacks the search attributes; 200 once a start would succeed', async () => {
    const namespace = `readyz-${uid()}`;
    const api = await apiOn(namespace);
    try {
      const missing = await api.ready();
      expect(missing.status).toBe(503);
      expect(missing.body.detail).toMatch(/temporal: .*namespace/i);

      const connection = h.temporal.connection as Connection;
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
      // Registered but without the product's search attributes: a start with them would fail.
      // (The frontend learns of a new namespace when its registry refreshes, within seconds.)
      const noAttributes = await waitFor(
        'the frontend to know the new namespace',
        async () => {
          const r = await api.ready();
          return /is not found/i.test(r.body.detail ?? '') ? undefined : r;
        },
        30_000,
      );
      expect(noAttributes.status).toBe(503);
      expect(noAttributes.body.detail).toMatch(/TenantId|search attribute/i);

      await waitFor('the search attributes to be registered', async () => {
        await ensureSearchAttributes(connection, namespace);
        return true;
      });
      const ready = await waitFor(
        '/readyz to turn 200',
        async () => {
          const r = await api.ready();
          return r.status === 200 ? r : undefined;
        },
        30_000,
      );
      expect(ready.body.temporal).toBe('ok');
    } finally {
      await api.close();
    }
  });
});
