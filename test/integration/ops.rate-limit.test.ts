import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../client/index.js';
import { defaultJobRegistry } from '../../jobs/index.js';
import { createPool } from '../../lib/db.js';
import { buildApp } from '../../server/app.js';
import { createJobsClient, type JobsClient } from '../../services/intake.js';
import { ADMIN_KEYS, ADMIN_KEY, startHarness, TENANTS, uid, waitFor, WEBHOOK_SECRET, type Harness } from '../support/harness.js';

// Issue 38 §5: a tenant's intake rate limit is one token bucket in Postgres, shared by every
// API process (two here, on one database, each with its own pool) and by the client library:
// over it, 429 with Retry-After and a problem body, nothing accepted, counted in /metrics.
let h: Harness;
let second: { app: FastifyInstance; pool: pg.Pool; jobs: JobsClient; url: string };
beforeAll(async () => {
  h = await startHarness('ops-rate-limit');
  const pool = createPool(h.databaseUrl, h.log);
  const jobs = createJobsClient({ jobs: defaultJobRegistry, pool, temporal: h.temporal, taskQueue: h.taskQueue });
  const app = buildApp({
    jobTypes: defaultJobRegistry,
    pool,
    temporal: h.temporal,
    jobs,
    log: h.log,
    adminKeys: ADMIN_KEYS,
    version: 'test',
    webhookSecrets: { sim: [WEBHOOK_SECRET] },
    metricsCacheMs: 0,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  second = { app, pool, jobs, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
});
afterAll(async () => {
  await second?.app.close();
  await second?.jobs.close();
  await second?.pool.end();
  await h?.close();
});

const admin = { tenant: null, headers: { authorization: `Bearer ${ADMIN_KEY}` } } as const;
const limit = (id: string, body: Record<string, unknown>) => h.api(`/v1/admin/tenants/${id}`, { ...admin, method: 'PATCH', body });

/** A submit of tenant b through the second API process. */
async function submitToSecond(key: string) {
  const res = await fetch(`${second.url}/v1/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TENANTS.b.key}`, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ type: 'summarize', input: { text: 'Through the second API.' } }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const intentsOfB = async () =>
  Number((await h.pool.query<{ n: string }>('SELECT count(*) AS n FROM job_intents WHERE tenant_id = $1', [TENANTS.b.id])).rows[0]!.n);

describe("a tenant's intake rate limit", () => {
  it('is one bucket across two API processes: over it, 429 with Retry-After and a problem, nothing accepted, counted', async () => {
    // 3 at once, then one every 10 s: the test never waits a refill before it asserts a refusal.
    const set = await limit(TENANTS.b.id, { intakeRatePerSecond: 0.1, intakeBurst: 3 });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: TENANTS.b.id, intakeRatePerSecond: 0.1, intakeBurst: 3 });

    const before = await intentsOfB();
    expect((await h.submit('summarize', { text: 'One.' }, { tenant: 'b' })).status).toBe(202);
    expect((await submitToSecond(`key-${uid()}`)).status).toBe(202);
    expect((await h.submit('summarize', { text: 'Three.' }, { tenant: 'b' })).status).toBe(202);

    const refusedKey = `key-${uid()}`;
    const refused = await submitToSecond(refusedKey);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 10).toBe(true);
    expect(refused.body).toMatchObject({ type: 'urn:durable-jobs:problem:rate-limited', status: 429, retryAfterSeconds: retryAfter });
    expect(refused.body.detail).toMatch(/intake limit of 0.1\/s; nothing was accepted/);
    // The first process refuses too: the bucket is shared.
    expect((await h.submit('summarize', { text: 'Five.' }, { tenant: 'b' })).status).toBe(429);
    expect(await intentsOfB()).toBe(before + 3);

    // Another tenant is not limited by b's bucket.
    expect((await h.submit('summarize', { text: 'Tenant a is free.' })).status).toBe(202);

    // Counted without a tenant label (tenants are not labels on /metrics): one refusal in the second process.
    const metrics = await (await fetch(`${second.url}/metrics`, { headers: admin.headers })).text();
    expect(metrics).toMatch(/^durable_jobs_intake_rate_limited_total 1$/m);

    // Once a token is back the same request is accepted (polled, never a sleep).
    const accepted = await waitFor(
      'a refilled token',
      async () => {
        const r = await submitToSecond(refusedKey);
        return r.status === 202 ? r : undefined;
      },
      60_000,
      1_000,
    );
    expect(accepted.body.status).toBe('queued');
  });

  it('refuses in the client library with a coded error', async () => {
    await limit(TENANTS.b.id, { intakeRatePerSecond: 0.01, intakeBurst: 1 });
    // The bucket may still hold tokens from the test before: spend them.
    let err: unknown;
    for (let i = 0; i < 5 && !err; i++) {
      await h.jobs
        .submitJob({ tenantId: TENANTS.b.id, type: 'summarize', idempotencyKey: `key-${uid()}`, input: { text: 'From backend code.' } })
        .catch((e: unknown) => {
          err = e;
        });
    }
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ code: 'rate_limited' });
    expect((err as RateLimitedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('is set and removed by PATCH /v1/admin/tenants/{id}; a bad limit is a 400 naming the field', async () => {
    for (const [body, field] of [
      [{ intakeRatePerSecond: -1 }, 'intakeRatePerSecond'],
      [{ intakeRatePerSecond: 'fast' }, 'intakeRatePerSecond'],
      [{ intakeRatePerSecond: 5, intakeBurst: 0 }, 'intakeBurst'],
      [{ intakeBurst: 5 }, 'intakeRatePerSecond'],
      [{}, 'mayUseHighPriority'],
    ] as const) {
      const r = await limit(TENANTS.b.id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(field);
    }
    const off = await limit(TENANTS.b.id, { intakeRatePerSecond: null });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ intakeRatePerSecond: null, intakeBurst: null });
    for (let i = 0; i < 5; i++) expect((await h.submit('summarize', { text: `Unlimited ${i}.` }, { tenant: 'b' })).status).toBe(202);
    expect((await limit('no-such-tenant', { intakeRatePerSecond: 1 })).status).toBe(404);
  });
});
